package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strconv"
)

//go:embed timeline.svg.tmpl
var svgSource string

// svgTmpl escapes every text and attribute for its context, as the page
// does: hostile session names, summaries and rules stay text.
var svgTmpl = template.Must(template.New("timeline").Parse(svgSource))

// Colours of the marks; the screenshot test looks for them.
var markColour = map[string]string{
	markAttempt:   "#0969da",
	markHit:       "#1a7f37",
	markForbidden: "#cf222e",
	markAlert:     "#fb8c00",
	markAlertSrc:  "#fb8c00",
	markTrigger:   "#8250df",
	markStop:      "#8250df",
	markEffect:    "#8250df",
}

// Geometry, in SVG pixels.
const (
	svgW     = 1100
	svgPlotX = 180 // lane names left of it
	svgPadR  = 24
	svgAxisY = 22
	svgRowH  = 16
	svgLaneP = 8 // lane padding above and below its rows
)

type svgView struct {
	W, H                  int
	Label                 string
	PlotX, PlotEnd, AxisY int
	NoteX, MoreX          int
	Lanes                 []svgLane
	Ticks                 []svgTick
	Items                 []svgItem
}

type svgLane struct {
	Y, H, TextY int
	NoteY       int
	Fill        string
	Name, Note  string
	More        string
}

type svgTick struct {
	X     string
	Label string
}

type svgItem struct {
	Shape          string // rect, circle, polygon
	X, Y, W, H     string
	Points         string
	Fill, Stroke   string
	Title          string
	Label          string
	LabelX, LabelY string
	LabelFill      string
	Anchor         string
}

// labelWidth estimates a label's width at font-size 11, on the wide side.
func labelWidth(s string) float64 { return 6.5 * float64(len([]rune(s))) }

// layout gives each item of a lane a row: attempts keep the model's
// stacking; a point mark goes to the first row where neither it nor its
// label overlaps what is already there (up to maxAttemptRows), so labels
// stay legible. It returns the rows and how many the lane needs.
func layout(l tlLane, xOf func(float64) float64) ([]int, int) {
	rows := make([]int, len(l.Items))
	ends := make([]float64, maxAttemptRows)
	for i := range ends {
		ends[i] = math.Inf(-1)
	}
	used := max(l.Rows, 1)
	for k, it := range l.Items {
		switch it.Mark {
		case markAttempt:
			rows[k] = it.Row
			continue
		case markHit, markForbidden:
			continue // a tick spans the lane
		}
		x := xOf(it.From)
		from, to := x-7, x+7
		if it.Label != "" {
			to = x + 9 + labelWidth(it.Label)
			if to > svgW-2 {
				from, to = x-9-labelWidth(it.Label), x+7
			}
		}
		r := maxAttemptRows - 1
		for i, end := range ends {
			if from > end {
				r = i
				break
			}
		}
		rows[k] = r
		ends[r] = math.Max(ends[r], to)
		used = max(used, r+1)
	}
	return rows, used
}

// renderSVG draws tl; deterministic (the same model gives the same bytes).
func renderSVG(tl timeline) (template.HTML, error) {
	if len(tl.Lanes) == 0 {
		return "", nil
	}
	v := svgView{W: svgW, Label: "Timeline of session " + tl.Session, PlotX: svgPlotX, PlotEnd: svgW - svgPadR,
		AxisY: svgAxisY, NoteX: svgPlotX + 6, MoreX: svgW - 4}
	plotW := float64(svgW - svgPlotX - svgPadR)
	span := math.Max(tl.SpanMS, 1)
	xOf := func(ms float64) float64 { return svgPlotX + ms/span*plotW }

	y := svgAxisY + 4
	for i, l := range tl.Lanes {
		rows, n := layout(l, xOf)
		l.Rows = n
		noteRow := -1
		if l.Note != "" && len(l.Items) > 0 {
			noteRow = l.Rows // a row of its own under the marks
			l.Rows++
		}
		h := 2*svgLaneP + l.Rows*svgRowH
		sl := svgLane{Y: y, H: h, TextY: y + h/2 + 4, NoteY: y + h/2 + 4, Name: l.Name, Note: l.Note, Fill: "#ffffff"}
		if noteRow >= 0 {
			sl.NoteY = y + svgLaneP + noteRow*svgRowH + svgRowH/2 + 4
		}
		if i%2 == 0 {
			sl.Fill = "#f6f8fa"
		}
		if l.More > 0 {
			sl.More = fmt.Sprintf("+%d more", l.More)
		}
		v.Lanes = append(v.Lanes, sl)
		for k, it := range l.Items {
			c := markColour[it.Mark]
			si := svgItem{Title: it.Title, Label: it.Label, Fill: c, Stroke: c, LabelFill: "#1b1f24", Anchor: "start"}
			x := xOf(it.From)
			cy := float64(y + svgLaneP + rows[k]*svgRowH + svgRowH/2)
			switch it.Mark {
			case markAttempt:
				w := math.Max(xOf(it.To)-x, 2)
				si.Shape, si.X, si.Y, si.W, si.H = "rect", f1(x), f1(cy-6), f1(w), "12"
				// The ID inside the bar when it fits; the tooltip has it anyway.
				if w < labelWidth(it.Label)+6 {
					si.Label = ""
				}
				si.LabelX, si.LabelY, si.LabelFill = f1(x+3), f1(cy+4), "#ffffff"
			case markHit, markForbidden:
				si.Shape, si.X, si.Y, si.W, si.H = "rect", f1(x-1), f1(float64(y+4)), "3", strconv.Itoa(h-8)
			case markEffect:
				si.Shape, si.X, si.Y = "circle", f1(x), f1(cy)
			default:
				si.Shape = "polygon"
				si.Points = fmt.Sprintf("%s,%s %s,%s %s,%s %s,%s", f1(x), f1(cy-6), f1(x+6), f1(cy), f1(x), f1(cy+6), f1(x-6), f1(cy))
				if it.Mark == markAlertSrc || it.Mark == markTrigger {
					si.Fill = "#ffffff"
				}
			}
			if si.Label != "" && it.Mark != markAttempt {
				si.LabelX, si.LabelY = f1(x+9), f1(cy+4)
				if x+9+labelWidth(si.Label) > svgW-2 { // no room on the right: the label goes left
					si.LabelX, si.Anchor = f1(x-9), "end"
				}
			}
			v.Items = append(v.Items, si)
		}
		y += h
	}
	v.H = y + 4
	for _, t := range ticks(tl.SpanMS) {
		v.Ticks = append(v.Ticks, svgTick{X: f1(xOf(t)), Label: axisLabel(t, tl.SpanMS)})
	}
	var buf bytes.Buffer
	if err := svgTmpl.Execute(&buf, v); err != nil {
		return "", fmt.Errorf("report: timeline: %w", err)
	}
	// html/template escaped every value above.
	return template.HTML(buf.String()), nil
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// ticks are round values from 0 to span, about ten of them.
func ticks(span float64) []float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return []float64{0}
	}
	raw := span / 10
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for i := 0; float64(i)*step <= span*1.0000001 && i <= 20; i++ {
		out = append(out, float64(i)*step)
	}
	return out
}

// axisLabel is a tick's label: ms for spans under 2 s, else s.
func axisLabel(ms, span float64) string {
	if span >= 2000 {
		return strconv.FormatFloat(math.Round(ms)/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(math.Round(ms*1000)/1000, 'f', -1, 64) + " ms"
}
