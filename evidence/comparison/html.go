package comparison

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/termsafe"
)

//go:embed page.html.tmpl
var pageSource string

// page values come from run folders, which are hostile input: html/template
// escapes each for its context and the page's CSP forbids scripts.
var page = template.Must(template.New("compare").Funcs(template.FuncMap{
	"join": strings.Join,
	// brief is a cell's view of what got through: the channels without
	// their attempt lists, at most four; the table below has everything.
	"brief": func(through []string) string {
		var out []string
		for i, t := range through {
			if i == 4 {
				out = append(out, fmt.Sprintf("+%d more", len(through)-4))
				break
			}
			name, _, _ := strings.Cut(t, " [")
			out = append(out, name)
		}
		return strings.Join(out, ", ")
	},
	"cellClass": func(v string) string {
		switch v {
		case "PASS", "FAIL", "INCONCLUSIVE", "SKIPPED":
			return "c-" + v
		}
		return "c-none"
	},
	"counts": func(p Column) string {
		pass, fail, other := p.counts()
		return fmt.Sprintf("%d / %d / %d", pass, fail, other)
	},
}).Parse(pageSource))

type placed struct {
	Profile, Gate, Path string
	Cell                Cell
}

type view struct {
	*Comparison
	Through   []placed
	NotPassed []placed
}

// WriteHTML renders the comparison as one self-contained page.
func (c *Comparison) WriteHTML(w io.Writer) error {
	v := view{Comparison: c}
	for _, r := range c.Matrix {
		for i, cell := range r.Cells {
			pl := placed{c.Profiles[i].Label(), r.Gate, r.Path, cell}
			if len(cell.Through) > 0 {
				v.Through = append(v.Through, pl)
			}
			if cell.Verdict != "PASS" {
				v.NotPassed = append(v.NotPassed, pl)
			}
		}
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, v); err != nil {
		return fmt.Errorf("compare page: %w", err)
	}
	// html/template stops markup, not bidi overrides or invisible
	// characters: the page's own text has none, so every one left came
	// from a run folder and is shown as an escape (internal/termsafe).
	_, err := io.WriteString(w, termsafe.Lines(buf.String()))
	return err
}
