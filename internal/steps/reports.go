package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cucumber/godog"
	"github.com/cucumber/godog/formatters"
	messages "github.com/cucumber/messages/go/v34"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

// The JUnit and cucumber reports (reports/junit.xml, reports/cucumber.json)
// are views of the final verdicts. godog's own formatters write theirs when
// the suite ends, before the run closes the lab and judges its whole record
// again (late hits, re-checks); a verdict made stricter then would be in
// results.json and missing from the JUnit a team's CI reads. So the suite
// only logs what godog ran (each feature, scenario and step, with its
// outcome and time) and Outcome.WriteReports makes both files from that log
// and the final results (reports_junit.go, reports_cucumber.go). Nothing of
// them is written to a file by godog, or read back.

// reportLog is what godog ran. godog gives its features and step outcomes
// to formatters (reportLog is one, fed through the process-wide list godog
// keeps, see register); when each scenario started and each step ended come
// from hooks, because godog holds a scenario's formatter events until it
// ends when scenarios run at once.
type reportLog struct {
	mu      sync.Mutex
	started time.Time
	docs    map[string]*messages.GherkinDocument // by feature uri
	pickles map[string]*pickleLog                // by pickle id
	ended   map[string]time.Time                 // by pickle step id
}

type pickleLog struct {
	pickle *messages.Pickle
	start  time.Time
	steps  map[string]stepLog // by pickle step id
}

type stepLog struct {
	status string // godog's word: passed, failed, skipped, undefined, pending, ambiguous
	err    string
	def    *formatters.StepDefinition
}

func newReportLog() *reportLog {
	return &reportLog{docs: map[string]*messages.GherkinDocument{}, pickles: map[string]*pickleLog{}, ended: map[string]time.Time{}}
}

// logFormat is the name godog knows the log by.
const logFormat = "gatehouse-log"

var (
	logFormatOnce sync.Once
	suiteLogs     sync.Map // godog suite name -> *reportLog, while that suite runs
	suiteSeq      atomic.Uint64
)

// register makes the log godog's formatter for one suite run: godog knows
// formatters by a name in a list of its own, process-wide, and calls the
// one named with the suite's name, so each run's suite gets a name of its
// own and the log is found by it. release forgets it.
func (l *reportLog) register() (suite string, release func()) {
	logFormatOnce.Do(func() {
		godog.Format(logFormat, "gatehouse: logs the run for its reports", func(suite string, _ io.Writer) formatters.Formatter {
			if v, ok := suiteLogs.Load(suite); ok {
				return v.(*reportLog)
			}
			return newReportLog() // a suite no Run registered: logged nowhere
		})
	})
	suite = fmt.Sprintf("gatehouse-%d", suiteSeq.Add(1))
	suiteLogs.Store(suite, l)
	return suite, func() { suiteLogs.Delete(suite) }
}

// begin notes when a scenario started (the Before hook).
func (l *reportLog) begin(p *godog.Scenario, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pickle(p).start = at
}

// stepEnded is an after-step hook: when each step ended. It changes nothing.
func (l *reportLog) stepEnded(ctx context.Context, st *godog.Step, _ godog.StepResultStatus, _ error) (context.Context, error) {
	l.mu.Lock()
	l.ended[st.Id] = time.Now()
	l.mu.Unlock()
	return ctx, nil
}

// pickle is p's entry; l.mu is held.
func (l *reportLog) pickle(p *messages.Pickle) *pickleLog {
	pl := l.pickles[p.Id]
	if pl == nil {
		pl = &pickleLog{pickle: p, steps: map[string]stepLog{}}
		l.pickles[p.Id] = pl
	}
	return pl
}

func (l *reportLog) step(p *messages.Pickle, st *messages.PickleStep, status string, def *formatters.StepDefinition, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := stepLog{status: status, def: def}
	if err != nil {
		s.err = err.Error()
	}
	l.pickle(p).steps[st.Id] = s
}

// The formatter's side (formatters.Formatter).

func (l *reportLog) TestRunStarted() {
	l.mu.Lock()
	l.started = time.Now()
	l.mu.Unlock()
}

func (l *reportLog) Feature(doc *messages.GherkinDocument, uri string, _ []byte) {
	l.mu.Lock()
	l.docs[uri] = doc
	l.mu.Unlock()
}

func (l *reportLog) Pickle(p *messages.Pickle) {
	l.mu.Lock()
	l.pickle(p)
	l.mu.Unlock()
}

func (l *reportLog) Defined(*messages.Pickle, *messages.PickleStep, *formatters.StepDefinition) {}

func (l *reportLog) Failed(p *messages.Pickle, st *messages.PickleStep, d *formatters.StepDefinition, err error) {
	l.step(p, st, "failed", d, err)
}

func (l *reportLog) Passed(p *messages.Pickle, st *messages.PickleStep, d *formatters.StepDefinition) {
	l.step(p, st, "passed", d, nil)
}

func (l *reportLog) Skipped(p *messages.Pickle, st *messages.PickleStep, d *formatters.StepDefinition) {
	l.step(p, st, "skipped", d, nil)
}

func (l *reportLog) Undefined(p *messages.Pickle, st *messages.PickleStep, d *formatters.StepDefinition) {
	l.step(p, st, "undefined", d, nil)
}

func (l *reportLog) Pending(p *messages.Pickle, st *messages.PickleStep, d *formatters.StepDefinition) {
	l.step(p, st, "pending", d, nil)
}

func (l *reportLog) Ambiguous(p *messages.Pickle, st *messages.PickleStep, d *formatters.StepDefinition, err error) {
	l.step(p, st, "ambiguous", d, err)
}

func (l *reportLog) Summary() {}

var _ formatters.Formatter = (*reportLog)(nil)

// WriteReports writes reports/junit.xml and reports/cucumber.json into
// folder from final, the run's results once every verdict is final: a
// scenario whose final verdict is PASS passes; FAIL and INCONCLUSIVE are
// failures (as godog showed them when the step returned them), each with
// its final reason, redacted and escaped. final must be o.Results, in their
// order, made final as the caller saw fit (its verdicts and reasons may
// differ; which scenario each is may not).
func (o *Outcome) WriteReports(folder *evidence.Folder, final []evidence.Result) error {
	if len(final) != len(o.pickles) {
		return fmt.Errorf("steps: reports: %d results for %d scenarios run", len(final), len(o.pickles))
	}
	verdicts := map[string]evidence.Result{}
	for i, res := range final {
		ref := o.pickles[i]
		if res.Gate != ref.gate || res.Session != ref.session || res.Path != ref.path || res.Scenario != ref.name {
			return fmt.Errorf("steps: reports: result %d (%s/%s) is not the scenario run there (%s/%s)", i, res.Gate, res.Path, ref.gate, ref.path)
		}
		verdicts[ref.id] = res
	}
	log := o.log
	if log == nil {
		log = newReportLog() // an Outcome Run did not make: no scenario ran
	}
	v := log.view(verdicts)
	junit, err := v.junit()
	if err != nil {
		return fmt.Errorf("steps: reports: %w", err)
	}
	cuke, err := v.cucumber()
	if err != nil {
		return fmt.Errorf("steps: reports: %w", err)
	}
	return errors.Join(folder.WriteFile(evidence.JUnitFile, junit),
		folder.WriteFile(evidence.CucumberFile, cuke))
}

// pickleRef says which scenario a result is: godog's pickle id, and what
// the result said of it when it was recorded.
type pickleRef struct {
	id, gate, path, session, name string
}
