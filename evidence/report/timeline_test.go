package report

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

var tz = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return tz.Add(time.Duration(ms) * time.Millisecond) }

func fp(v float64) *float64 { return &v }

// marks is a lane's items as "mark@from[-to][:label]", in drawing order.
func marks(l tlLane) []string {
	var out []string
	for _, it := range l.Items {
		s := fmt.Sprintf("%s@%g", it.Mark, it.From)
		if it.To != it.From {
			s += fmt.Sprintf("-%g", it.To)
		}
		if it.Label != "" {
			s += ":" + it.Label
		}
		out = append(out, s)
	}
	return out
}

func laneNamed(tl timeline, name string) *tlLane {
	for i := range tl.Lanes {
		if tl.Lanes[i].Name == name {
			return &tl.Lanes[i]
		}
	}
	return nil
}

func laneNames(tl timeline) []string {
	var out []string
	for _, l := range tl.Lanes {
		out = append(out, l.Name)
	}
	return out
}

func TestBuildTimeline(t *testing.T) {
	win := func(r sessionRecords) sessionRecords { r.Session, r.From, r.To = "s1", tz, at(5000); return r }
	manyHits := func(n int, endpoints int) []evidence.Hit {
		var hs []evidence.Hit
		for i := 0; i < n; i++ {
			hs = append(hs, evidence.Hit{Time: at(i), Endpoint: fmt.Sprintf("ep%02d", i%endpoints), Session: "s1"})
		}
		return hs
	}
	tests := []struct {
		name  string
		rec   sessionRecords
		check func(t *testing.T, tl timeline)
	}{
		{"empty session draws nothing", win(sessionRecords{}), func(t *testing.T, tl timeline) {
			if len(tl.Lanes) != 0 || !tl.Origin.IsZero() {
				t.Errorf("lanes %v origin %v", laneNames(tl), tl.Origin)
			}
		}},
		{"a zero time is counted, not drawn at 1970", win(sessionRecords{
			Attempts: []evidence.Attempt{{ID: "a", DurationMS: 5}, {ID: "b", Start: at(100), DurationMS: 20}},
			Hits:     []evidence.Hit{{Endpoint: "callback"}},
		}), func(t *testing.T, tl timeline) {
			if tl.Undated != 2 {
				t.Errorf("undated %d, want 2", tl.Undated)
			}
			if !tl.Origin.Equal(at(100)) {
				t.Errorf("origin %v, want the dated attempt's start", tl.Origin)
			}
			if got := strings.Join(laneNames(tl), "|"); got != laneAttempts {
				t.Errorf("lanes %q: an undated hit made a lane", got)
			}
			if got := marks(tl.Lanes[0]); strings.Join(got, " ") != "attempt@0-20:b" {
				t.Errorf("attempts %q", got)
			}
		}},
		{"records out of order are drawn in time order from the earliest", win(sessionRecords{
			Attempts: []evidence.Attempt{{ID: "late", Start: at(900), DurationMS: 100}, {ID: "early", Start: at(200), DurationMS: 50}},
			Hits: []evidence.Hit{{Time: at(700), Endpoint: "callback", Session: "s1"}, {Time: at(300), Endpoint: "callback", Session: "s1"},
				{Time: at(150), Endpoint: "inference", Session: "s1"}},
		}), func(t *testing.T, tl timeline) {
			if !tl.Origin.Equal(at(150)) || tl.SpanMS != 850 {
				t.Errorf("origin %v span %v", tl.Origin, tl.SpanMS)
			}
			want := map[string]string{laneAttempts: "attempt@50-100:early attempt@750-850:late",
				"hits: callback": "hit@150 hit@550", "hits: inference": "hit@0"}
			for lane, w := range want {
				l := laneNamed(tl, lane)
				if l == nil || strings.Join(marks(*l), " ") != w {
					t.Errorf("lane %s: %v, want %s", lane, l, w)
				}
			}
			if got := strings.Join(laneNames(tl), "|"); got != "attempts|hits: callback|hits: inference" {
				t.Errorf("lane order %q", got)
			}
		}},
		{"a forbidden hit is marked apart from allowed ones", win(sessionRecords{
			Hits:      []evidence.Hit{{Time: at(10), Endpoint: "callback", Summary: "GET /x"}, {Time: at(20), Endpoint: "callback", Summary: "GET /y"}},
			Forbidden: map[string]bool{hitKey(evidence.Hit{Time: at(20), Endpoint: "callback", Summary: "GET /y"}): true},
		}), func(t *testing.T, tl timeline) {
			if got := strings.Join(marks(tl.Lanes[0]), " "); got != "hit@0 forbidden@10" {
				t.Errorf("hits %q", got)
			}
		}},
		{"items over the cap become +N more", win(sessionRecords{Hits: manyHits(500, 1)}), func(t *testing.T, tl timeline) {
			l := tl.Lanes[0]
			if len(l.Items) != maxLaneItems || l.More != 500-maxLaneItems {
				t.Errorf("drawn %d, more %d", len(l.Items), l.More)
			}
		}},
		{"endpoints over the cap share one lane", win(sessionRecords{Hits: manyHits(20, 10)}), func(t *testing.T, tl timeline) {
			names := laneNames(tl)
			if len(names) != maxEndpointLanes+1 || names[len(names)-1] != otherHits {
				t.Fatalf("lanes %q", names)
			}
			if n := len(laneNamed(tl, otherHits).Items); n != 8 {
				t.Errorf("other endpoints lane has %d hits, want 8", n)
			}
		}},
		{"a record far outside the scenario is counted, not drawn", win(sessionRecords{
			Hits: []evidence.Hit{{Time: at(10), Endpoint: "callback"}, {Time: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC), Endpoint: "callback"}},
			Attempts: []evidence.Attempt{{ID: "forged", Start: at(20), DurationMS: math.NaN()},
				{ID: "endless", Start: at(30), DurationMS: 1e15}, {ID: "back", Start: at(40), DurationMS: -5}},
		}), func(t *testing.T, tl timeline) {
			if tl.Outside != 1 || tl.SpanMS != 30 {
				t.Errorf("outside %d span %v", tl.Outside, tl.SpanMS)
			}
			if got := strings.Join(marks(tl.Lanes[0]), " "); got != "attempt@10:forged attempt@20:endless attempt@30:back" {
				t.Errorf("forged durations drawn as %q", got)
			}
		}},
		{"alerts: received, the source's own time, an imported one, latency on the first", win(sessionRecords{
			Attempts: []evidence.Attempt{{ID: "http", Start: at(0), DurationMS: 10}},
			Alerts: []Alert{
				{Source: "falco", Rule: "r", Received: at(400), EventTime: at(400), Matched: []string{"s1/http"}},
				{Source: "builtin", Rule: "r", Received: at(250), EventTime: at(5), Matched: []string{"s1/http"}},
				{Source: "audit", Rule: "r", EventTime: at(8), Imported: true, Matched: []string{"s1/http"}},
			},
			Detected: map[string]float64{"http": 250},
		}), func(t *testing.T, tl timeline) {
			l := laneNamed(tl, laneAlerts)
			if l == nil {
				t.Fatal("no alerts lane")
			}
			if got := strings.Join(marks(*l), " "); got != "alert-src@5 alert-src@8:imported alert@250:+250 ms alert@400" {
				t.Errorf("alerts %q", got)
			}
		}},
		{"a session name with a slash still gets its alerts", sessionRecords{Session: "a/b",
			Alerts: []Alert{{Received: at(1), Matched: []string{"a/b/http"}}, {Received: at(2), Matched: []string{"a/other"}}}},
			func(t *testing.T, tl timeline) {
				if l := laneNamed(tl, laneAlerts); l == nil || !strings.Contains(l.Items[0].Title, "for attempt http") {
					t.Errorf("alerts lane %+v", l)
				}
			}},
		{"stop and response effects, with latencies and what was not observed", win(sessionRecords{
			Stops: []evidence.StopSent{{Session: "s1", At: at(1000), LatencyMS: fp(120)}, {Session: "s1", At: at(3000)}},
			Responses: []evidence.Response{{Mode: "stop", Trigger: evidence.ResponseTrigger{Received: at(100)}, Started: at(110), PollMS: 50,
				Effects: []evidence.ResponseEffect{
					{Effect: evidence.EffectProcessesGone, Observed: true, At: at(300), LatencyMS: fp(200)},
					{Effect: evidence.EffectEgressRefused, Observed: true, At: at(150), LatencyMS: fp(50), Before: true},
					{Effect: evidence.EffectTokenRefused},
				}}},
		}), func(t *testing.T, tl timeline) {
			l := laneNamed(tl, laneResponse)
			if l == nil {
				t.Fatal("no response lane")
			}
			want := "trigger@0:trigger stop@10:stop effect@50:egress-refused +50 ms (before) effect@200:processes-gone +200 ms stop@900:stop effect@1020:stopped +120 ms stop@2900:stop"
			if got := strings.Join(marks(*l), " "); got != want {
				t.Errorf("response lane\n got %s\nwant %s", got, want)
			}
			if l.Note != "not observed: token-refused" {
				t.Errorf("note %q", l.Note)
			}
		}},
		{"kernel counts are a label, never times", win(sessionRecords{Emitted: map[string]uint64{"resolver": 1, "callback": 3}}), func(t *testing.T, tl timeline) {
			if len(tl.Lanes) != 1 || tl.Lanes[0].Name != laneKernel || len(tl.Lanes[0].Items) != 0 {
				t.Fatalf("lanes %+v", tl.Lanes)
			}
			if !strings.HasSuffix(tl.Lanes[0].Note, "callback 3, resolver 1") {
				t.Errorf("note %q", tl.Lanes[0].Note)
			}
		}},
		{"overlapping attempts stack, up to the row cap", win(sessionRecords{Attempts: []evidence.Attempt{
			{ID: "a", Start: at(0), DurationMS: 100}, {ID: "b", Start: at(10), DurationMS: 100}, {ID: "c", Start: at(20), DurationMS: 100},
			{ID: "d", Start: at(30), DurationMS: 100}, {ID: "e", Start: at(200), DurationMS: 10}}}), func(t *testing.T, tl timeline) {
			var rows []int
			for _, it := range tl.Lanes[0].Items {
				rows = append(rows, it.Row)
			}
			if fmt.Sprint(rows) != "[0 1 2 2 0]" || tl.Lanes[0].Rows != maxAttemptRows {
				t.Errorf("rows %v (lane %d)", rows, tl.Lanes[0].Rows)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, buildTimeline(tt.rec)) })
	}
}

// hostileRecords puts payloads in every text the SVG draws or titles.
func hostileRecords() sessionRecords {
	p := `<script>alert(1)</script>"' onload="x`
	return sessionRecords{Session: "s" + p, From: tz, To: at(3000),
		Attempts: []evidence.Attempt{{Session: "s", ID: "id-" + p + strings.Repeat("long", 40), Kind: p, Target: p, Outcome: p, Error: p, Start: at(0), DurationMS: 2500}},
		Hits:     []evidence.Hit{{Time: at(50), Endpoint: "ep" + p, Summary: p, Src: p}},
		Alerts:   []Alert{{Source: p, Rule: p, Object: p, Received: at(60), Matched: []string{"s" + p + "/id"}}},
		Responses: []evidence.Response{{Mode: "exec:" + p, Trigger: evidence.ResponseTrigger{Rule: p, Received: at(60)}, Started: at(70),
			Effects: []evidence.ResponseEffect{{Effect: p, Observed: true, At: at(80)}, {Effect: p}}}},
		Emitted: map[string]uint64{p: 1},
	}
}

func TestTimelineSVG(t *testing.T) {
	t.Run("hostile text is escaped and the SVG is well formed", func(t *testing.T) {
		svg, err := renderSVG(buildTimeline(hostileRecords()))
		if err != nil {
			t.Fatal(err)
		}
		s := string(svg)
		for _, bad := range []string{"<script", `" onload=`, "' onload="} {
			if strings.Contains(s, bad) {
				t.Errorf("SVG holds raw %q", bad)
			}
		}
		if !strings.Contains(s, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Error("the payload is not shown as text")
		}
		// Only the elements and attributes the template writes: no handler,
		// link, style or foreign element came out of the evidence.
		elems, attrs := checkXML(t, s)
		if got := strings.Join(elems, " "); got != "circle g line polygon rect svg text title" {
			t.Errorf("elements %s", got)
		}
		if got := strings.Join(attrs, " "); got != "aria-label class cx cy fill font-family font-size height points r role stroke stroke-dasharray stroke-width text-anchor viewBox width x x1 x2 xmlns y y1 y2" {
			t.Errorf("attributes %s", got)
		}
		// Every mark carries its tooltip.
		if g, ti := strings.Count(s, "<g>"), strings.Count(s, "<g><title>"); g == 0 || g != ti {
			t.Errorf("%d marks, %d with a title", g, ti)
		}
	})
	t.Run("deterministic", func(t *testing.T) {
		a, _ := renderSVG(buildTimeline(hostileRecords()))
		b, _ := renderSVG(buildTimeline(hostileRecords()))
		if a != b {
			t.Error("the same records drew different SVG")
		}
	})
	t.Run("empty session renders nothing", func(t *testing.T) {
		svg, err := renderSVG(buildTimeline(sessionRecords{Session: "s"}))
		if err != nil || svg != "" {
			t.Errorf("svg %q err %v", svg, err)
		}
	})
	t.Run("caps stay bounded and say so", func(t *testing.T) {
		rec := sessionRecords{Session: "s"}
		for i := 0; i < 5000; i++ {
			rec.Hits = append(rec.Hits, evidence.Hit{Time: at(i), Endpoint: fmt.Sprintf("ep%d", i%50), Summary: strings.Repeat("x", 1000)})
			rec.Attempts = append(rec.Attempts, evidence.Attempt{ID: "a", Start: at(i), DurationMS: 1})
		}
		svg, err := renderSVG(buildTimeline(rec))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(svg), "<g>"); n > (maxEndpointLanes+2)*maxLaneItems {
			t.Errorf("%d marks drawn", n)
		}
		if len(svg) > 600_000 {
			t.Errorf("SVG is %d bytes", len(svg))
		}
		if !strings.Contains(string(svg), fmt.Sprintf("&#43;%d more", 5000-maxLaneItems)) {
			t.Error("no +N more on the attempts lane")
		}
		checkXML(t, string(svg))
	})
	t.Run("axis in ms under 2 s, in s above", func(t *testing.T) {
		for _, tt := range []struct {
			span float64
			want string
		}{{850, "0 ms|100 ms|200 ms|300 ms|400 ms|500 ms|600 ms|700 ms|800 ms"}, {2600, "0 s|0.5 s|1 s|1.5 s|2 s|2.5 s"}, {0, "0 ms"}} {
			var got []string
			for _, x := range ticks(tt.span) {
				got = append(got, axisLabel(x, tt.span))
			}
			if strings.Join(got, "|") != tt.want {
				t.Errorf("span %v: %q, want %q", tt.span, got, tt.want)
			}
		}
	})
}

// checkXML fails unless s parses as XML to the end (balanced, escaped)
// and returns the element and attribute names it uses, sorted.
func checkXML(t *testing.T, s string) (elems, attrs []string) {
	t.Helper()
	e, a := map[string]bool{}, map[string]bool{}
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			e[se.Name.Local] = true
			for _, at := range se.Attr {
				a[at.Name.Local] = true
			}
		}
	}
	return sortedKeys(e), sortedKeys(a)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRecordsForSession(t *testing.T) {
	bad := evidence.Hit{Time: at(5), Endpoint: "callback", Session: "s1", Summary: "GET /bad"}
	r := evidence.Result{Session: "s1", Start: tz, DurationMS: 1000, Hits: []evidence.Hit{bad},
		Stops: []evidence.StopSent{{Session: "s1", At: at(1)}, {Session: "s2", At: at(2)}},
		Detection: &evidence.Detection{Measured: true, Attempts: []evidence.DetectionAttempt{
			{ID: "http", Session: "s1", Detected: &evidence.Detected{LatencyMS: fp(9)}}, {ID: "dns", Session: "s1", Detected: &evidence.Detected{}}}},
		Emitted: map[string]uint64{"callback": 1}}
	in := Input{Hits: []evidence.Hit{bad, {Time: at(6), Endpoint: "inference", Session: "s1"}, {Time: at(7), Session: "s2"}},
		Attempts: []evidence.Attempt{{Session: "s1", ID: "http"}, {Session: "s2", ID: "x"}},
		Alerts:   []Alert{{Matched: []string{"s2/x", "s1/http"}}, {Matched: []string{"s3/y"}}}}
	if got := sessionsOf(r); fmt.Sprint(got) != "[s1 s2]" {
		t.Errorf("sessions %v", got)
	}
	s1 := recordsFor("s1", r, in)
	if len(s1.Hits) != 2 || len(s1.Forbidden) != 1 || len(s1.Attempts) != 1 || len(s1.Alerts) != 1 || len(s1.Stops) != 1 ||
		len(s1.Detected) != 1 || s1.Emitted == nil {
		t.Errorf("s1 records: %+v", s1)
	}
	s2 := recordsFor("s2", r, in)
	if len(s2.Hits) != 1 || len(s2.Forbidden) != 0 || len(s2.Attempts) != 1 || len(s2.Alerts) != 1 || len(s2.Stops) != 1 || s2.Emitted != nil {
		t.Errorf("s2 records: %+v", s2)
	}
}
