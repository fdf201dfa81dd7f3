package steps

import (
	"encoding/json"
	"fmt"
	"strings"

	messages "github.com/cucumber/messages/go/v34"
)

// reports/cucumber.json: the cucumber JSON format (an array of features,
// each with its elements and their steps, each step with a result), with
// the fields godog's own cucumber formatter gave, so the report readers
// that read it before read it the same way.

type cukeFeature struct {
	URI         string        `json:"uri"`
	ID          string        `json:"id"`
	Keyword     string        `json:"keyword"`
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Line        int64         `json:"line"`
	Comments    []cukeComment `json:"comments,omitempty"`
	Tags        []cukeTag     `json:"tags,omitempty"`
	Elements    []cukeElement `json:"elements"`
}

type cukeComment struct {
	Value string `json:"value"`
	Line  int64  `json:"line"`
}

type cukeTag struct {
	Name string `json:"name"`
	Line int64  `json:"line"`
}

type cukeElement struct {
	ID          string     `json:"id"`
	Keyword     string     `json:"keyword"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Line        int64      `json:"line"`
	Type        string     `json:"type"`
	Tags        []cukeTag  `json:"tags,omitempty"`
	Steps       []cukeStep `json:"steps,omitempty"`
}

type cukeStep struct {
	Keyword   string         `json:"keyword"`
	Name      string         `json:"name"`
	Line      int64          `json:"line"`
	DocString *cukeDocString `json:"doc_string,omitempty"`
	Match     cukeMatch      `json:"match"`
	Result    cukeResult     `json:"result"`
	Rows      []cukeRow      `json:"rows,omitempty"`
}

type cukeDocString struct {
	Value       string `json:"value"`
	ContentType string `json:"content_type"`
	Line        int64  `json:"line"`
}

type cukeMatch struct {
	Location string `json:"location"`
}

type cukeResult struct {
	Status   string `json:"status"`
	Error    string `json:"error_message,omitempty"`
	Duration *int64 `json:"duration,omitempty"` // nanoseconds
}

type cukeRow struct {
	Cells []string `json:"cells"`
}

func (v reportView) cucumber() ([]byte, error) {
	out := make([]cukeFeature, 0, len(v.features))
	for _, f := range v.features {
		cf := cukeFeature{URI: f.uri, ID: cukeID(f.name()), Name: f.name(), Elements: []cukeElement{}}
		if f.doc != nil && f.doc.Feature != nil {
			ft := f.doc.Feature
			cf.Keyword, cf.Description, cf.Line, cf.Tags = ft.Keyword, ft.Description, line(ft.Location), cukeTags(ft.Tags)
			for _, c := range f.doc.Comments {
				cf.Comments = append(cf.Comments, cukeComment{Value: strings.TrimSpace(c.Text), Line: line(c.Location)})
			}
		}
		for _, sc := range f.scenarios {
			cf.Elements = append(cf.Elements, f.element(cf, sc))
		}
		out = append(out, cf)
	}
	b, err := json.MarshalIndent(out, "", "    ")
	if err != nil {
		return nil, fmt.Errorf("cucumber.json: %w", err)
	}
	return append(b, '\n'), nil
}

func (f featureView) element(cf cukeFeature, sc scenarioView) cukeElement {
	p := sc.pickle
	e := cukeElement{Name: p.Name, Type: "scenario", Line: line(p.Location)}
	e.ID = cf.ID + ";" + cukeID(p.Name)
	e.Tags = append(e.Tags, cf.Tags...)
	if len(p.AstNodeIds) > 0 {
		if s := f.ast.scenarios[p.AstNodeIds[0]]; s != nil {
			e.Keyword, e.Description = s.Keyword, s.Description
			e.Tags = append(e.Tags, cukeTags(s.Tags)...)
			if e.Line == 0 {
				e.Line = line(s.Location)
			}
		}
	}
	if len(p.AstNodeIds) > 1 {
		if r, ok := f.ast.rows[p.AstNodeIds[1]]; ok {
			e.ID += fmt.Sprintf(";%s;%d", cukeID(r.examples.Name), r.n+2)
			e.Line = line(r.row.Location)
			e.Tags = append(e.Tags, cukeTags(r.examples.Tags)...)
		}
	}
	for _, st := range sc.steps {
		cs := cukeStep{Name: st.step.Text, Result: cukeResult{Status: st.status, Error: st.err}}
		if len(st.step.AstNodeIds) > 0 {
			if a := f.ast.steps[st.step.AstNodeIds[0]]; a != nil {
				cs.Keyword, cs.Line = a.Keyword, line(a.Location)
				if arg := st.step.Argument; arg != nil && arg.DocString != nil && a.DocString != nil {
					cs.DocString = &cukeDocString{Value: arg.DocString.Content, ContentType: strings.TrimSpace(arg.DocString.MediaType), Line: line(a.DocString.Location)}
				}
			}
		}
		if arg := st.step.Argument; arg != nil && arg.DataTable != nil {
			for _, r := range arg.DataTable.Rows {
				row := cukeRow{Cells: []string{}}
				for _, c := range r.Cells {
					row.Cells = append(row.Cells, c.Value)
				}
				cs.Rows = append(cs.Rows, row)
			}
		}
		cs.Match.Location = matchLocation(f.uri, cs.Line, st.def)
		if st.took != nil {
			ns := st.took.Nanoseconds()
			cs.Result.Duration = &ns
		}
		e.Steps = append(e.Steps, cs)
	}
	return e
}

func cukeTags(ts []*messages.Tag) []cukeTag {
	var out []cukeTag
	for _, t := range ts {
		out = append(out, cukeTag{Name: t.Name, Line: line(t.Location)})
	}
	return out
}

func line(l *messages.Location) int64 {
	if l == nil {
		return 0
	}
	return l.Line
}

// cukeID is a name as cucumber ids carry it: lower case, spaces as dashes.
func cukeID(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), " ", "-")
}
