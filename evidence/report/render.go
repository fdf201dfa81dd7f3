package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"

	"github.com/gatehouse-dev/gatehouse/evidence"
	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

//go:embed report.html.tmpl
var pageSource string

// tmpl is parsed once; html/template escapes every value for its context.
var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": func(ms float64) float64 { return ms / 1000 },
}).Parse(pageSource))

// Render writes the report for in.
func Render(w io.Writer, in Input) error {
	// Effective config may hold typed values when built in-process; the
	// report shows it as run.json records it, so go through JSON once.
	if in.Run.Effective != nil {
		b, err := json.Marshal(in.Run.Effective)
		if err != nil {
			return fmt.Errorf("report: effective config: %w", err)
		}
		in.Run.Effective = nil
		if err := json.Unmarshal(b, &in.Run.Effective); err != nil {
			return fmt.Errorf("report: effective config: %w", err)
		}
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, newPage(in)); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	// html/template stops markup, not a bidi override that shows
	// "report\u202etxt.exe" as "reportexe.txt", nor invisible characters or
	// C1 controls: the page's own text has none, so every one left came
	// from evidence and is shown as an escape (internal/termsafe).
	_, err := io.WriteString(w, termsafe.Lines(buf.String()))
	return err
}

// Bytes renders the report of the run folder dir.
func Bytes(dir string) ([]byte, error) {
	in, err := Load(dir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := Render(&buf, in); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteFile renders the report of dir into dir/report.html.
func WriteFile(dir string) error {
	b, err := Bytes(dir)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+evidence.ReportFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, evidence.ReportFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
