package steps

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// reports/junit.xml: one testsuite per feature, one testcase per scenario
// (an outline's row each), in the shape godog's own JUnit formatter gave
// it, so the CI systems that read it before read it the same way.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitFailure `xml:"failure,omitempty"`
	Errors  []junitError  `xml:"error"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
}

// junitError notes a step that did not run (skipped) or could not
// (undefined, pending, ambiguous), as godog did.
type junitError struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
}

// junitName is the suite's name in the file, as it was with godog.
const junitName = "gatehouse"

func (v reportView) junit() ([]byte, error) {
	doc := junitSuites{Name: junitName, Time: seconds(v.started, v.end)}
	for _, f := range v.features {
		s := junitSuite{Name: f.name()}
		named := map[string]int{}
		for _, sc := range f.scenarios {
			named[sc.pickle.Name]++
		}
		nth := map[string]int{}
		var first, last time.Time
		for _, sc := range f.scenarios {
			c := junitCase{Name: sc.pickle.Name, Status: "passed", Time: seconds(sc.start, sc.end)}
			if named[c.Name] > 1 {
				// Two scenarios of one name (an outline whose name has no
				// parameter) are told apart by their order, as godog did.
				nth[c.Name]++
				c.Name += fmt.Sprintf(" #%d", nth[c.Name])
			}
			if sc.verdict != evidence.Pass {
				c.Status = "failed"
				c.Failure = &junitFailure{Message: sc.message}
				if sc.decided >= 0 {
					c.Failure.Message = "Step " + sc.steps[sc.decided].step.Text + ": " + sc.message
				}
				s.Failures++
			}
			for i, st := range sc.steps {
				if i != sc.decided && st.status != "passed" && st.status != "failed" {
					c.Errors = append(c.Errors, junitError{Type: st.status, Message: "Step " + st.step.Text})
				}
			}
			if first.IsZero() || sc.start.Before(first) {
				first = sc.start
			}
			if sc.end.After(last) {
				last = sc.end
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		s.Time = seconds(first, last)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("junit.xml: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// seconds is the time from a to b as JUnit writes it; 0 when either is
// unknown.
func seconds(a, b time.Time) string {
	if a.IsZero() || b.Before(a) {
		return "0"
	}
	return strconv.FormatFloat(b.Sub(a).Seconds(), 'f', -1, 64)
}
