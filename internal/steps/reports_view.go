package steps

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog/formatters"
	messages "github.com/cucumber/messages/go/v34"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// reportView is the log joined with the final verdicts: what both reports
// show, decided once so that they cannot disagree.
type reportView struct {
	started  time.Time
	end      time.Time // when the last step ended
	features []featureView
}

type featureView struct {
	uri       string
	doc       *messages.GherkinDocument // nil if godog never gave it (then names stand alone)
	ast       astIndex
	scenarios []scenarioView
}

type scenarioView struct {
	pickle     *messages.Pickle
	start, end time.Time
	verdict    evidence.Verdict
	// message is the verdict and its final reason, redacted and escaped
	// ("FAIL: ..."); "" for a PASS. decided is the step that carries it
	// (-1: none, the scenario has no step that ran).
	message string
	decided int
	steps   []stepView
}

type stepView struct {
	step   *messages.PickleStep
	status string
	err    string // redacted and escaped
	def    *formatters.StepDefinition
	took   *time.Duration // nil for a step that did not run
}

// noVerdict is the reason shown for a scenario godog ran that left no
// result: never a pass.
const noVerdict = "no verdict was recorded for this scenario"

// view joins the log with verdicts (by pickle id). A PASS shows the steps
// as godog ran them. FAIL and INCONCLUSIVE are failures, as godog showed a
// step that returned them: the step that stopped the scenario, or else the
// last that ran (the verdict's own step, or one before a verdict made
// stricter after the steps), is failed with the final verdict and reason.
func (l *reportLog) view(verdicts map[string]evidence.Result) reportView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := reportView{started: l.started, end: l.started}
	byURI := map[string]*featureView{}
	for _, pl := range l.pickles {
		f := byURI[pl.pickle.Uri]
		if f == nil {
			f = &featureView{uri: pl.pickle.Uri, doc: l.docs[pl.pickle.Uri]}
			f.ast = indexAST(f.doc)
			byURI[f.uri] = f
		}
		sc := l.scenario(pl, verdicts)
		if sc.end.After(v.end) {
			v.end = sc.end
		}
		f.scenarios = append(f.scenarios, sc)
	}
	for _, f := range byURI {
		sort.Slice(f.scenarios, func(i, j int) bool { return idLess(f.scenarios[i].pickle.Id, f.scenarios[j].pickle.Id) })
		v.features = append(v.features, *f)
	}
	sort.Slice(v.features, func(i, j int) bool {
		a, b := v.features[i].name(), v.features[j].name()
		if a != b {
			return a < b
		}
		return v.features[i].uri < v.features[j].uri
	})
	return v
}

// scenario is one pickle's view; l.mu is held.
func (l *reportLog) scenario(pl *pickleLog, verdicts map[string]evidence.Result) scenarioView {
	sc := scenarioView{pickle: pl.pickle, start: pl.start, end: pl.start, decided: -1}
	res, ok := verdicts[pl.pickle.Id]
	if !ok {
		res = evidence.Result{Verdict: evidence.Inconclusive, Reason: noVerdict}
	}
	sc.verdict = res.Verdict
	prev := pl.start
	for _, st := range pl.pickle.Steps {
		s, ok := pl.steps[st.Id]
		if !ok {
			s.status = "skipped" // godog said nothing of it: it did not run
		}
		sv := stepView{step: st, status: s.status, err: evidence.Redact(s.err), def: s.def}
		if end, ok := l.ended[st.Id]; ok && (s.status == "passed" || s.status == "failed") && !prev.IsZero() {
			d := end.Sub(prev)
			sv.took, prev = &d, end
			if end.After(sc.end) {
				sc.end = end
			}
		}
		sc.steps = append(sc.steps, sv)
	}
	if res.Verdict == evidence.Pass {
		return sc
	}
	sc.message = string(res.Verdict) + ": " + evidence.Redact(res.Reason)
	for i, s := range sc.steps {
		if s.status == "skipped" {
			continue
		}
		sc.decided = i
		if s.status != "passed" {
			break
		}
	}
	if sc.decided >= 0 {
		d := &sc.steps[sc.decided]
		d.status, d.err = "failed", sc.message
		if d.took == nil {
			zero := time.Duration(0)
			d.took = &zero
		}
	}
	return sc
}

// idLess orders godog's ids as numbers (the order of the feature file),
// and any other id after them by its text.
func idLess(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return x < y
	case errA == nil || errB == nil:
		return errA == nil
	}
	return a < b
}

func (f *featureView) name() string {
	if f.doc == nil || f.doc.Feature == nil {
		return f.uri
	}
	return f.doc.Feature.Name
}

// astIndex finds the nodes of a feature file a pickle names by id.
type astIndex struct {
	scenarios map[string]*messages.Scenario
	steps     map[string]*messages.Step
	rows      map[string]exampleRow
}

type exampleRow struct {
	examples *messages.Examples
	row      *messages.TableRow
	n        int // its index in the table's body
}

func indexAST(doc *messages.GherkinDocument) astIndex {
	ix := astIndex{scenarios: map[string]*messages.Scenario{}, steps: map[string]*messages.Step{}, rows: map[string]exampleRow{}}
	if doc == nil || doc.Feature == nil {
		return ix
	}
	add := func(bg *messages.Background, sc *messages.Scenario) {
		if bg != nil {
			for _, st := range bg.Steps {
				ix.steps[st.Id] = st
			}
		}
		if sc == nil {
			return
		}
		ix.scenarios[sc.Id] = sc
		for _, st := range sc.Steps {
			ix.steps[st.Id] = st
		}
		for _, ex := range sc.Examples {
			for n, row := range ex.TableBody {
				ix.rows[row.Id] = exampleRow{examples: ex, row: row, n: n}
			}
		}
	}
	for _, c := range doc.Feature.Children {
		add(c.Background, c.Scenario)
		if c.Rule != nil {
			for _, rc := range c.Rule.Children {
				add(rc.Background, rc.Scenario)
			}
		}
	}
	return ix
}

// matchLocation is where a step's definition is: file:line of its
// handler, or its name when that is a method value (whose code is a
// wrapper the compiler made); the step's own place when none matched.
func matchLocation(uri string, line int64, def *formatters.StepDefinition) string {
	if def != nil && def.Handler != nil {
		if h := reflect.ValueOf(def.Handler); h.Kind() == reflect.Func {
			if fn := runtime.FuncForPC(h.Pointer()); fn != nil {
				file, l := fn.FileLine(h.Pointer())
				if !strings.HasPrefix(file, "<") {
					return fmt.Sprintf("%s:%d", filepath.Base(file), l)
				}
				name := strings.TrimSuffix(fn.Name(), "-fm")
				return name[strings.LastIndex(name, "/")+1:]
			}
		}
	}
	return fmt.Sprintf("%s:%d", uri, line)
}
