// Command benchchart draws docs/benchmarks-scaling.svg from the output of
// the engine's scaling benchmarks (BenchmarkDecideCached and
// BenchmarkLoadScale, see docs/benchmarks.md): one column per axis a
// configuration grows on (groups per user, queue depth, ACL entries,
// queues), the decision cost above, the load cost below, each on
// logarithmic scales, the median of every repeated run. Lines from an
// optional "before" set of files are drawn dashed.
//
//	go run ./hack/benchchart -decide after-decide.txt -load after-load.txt \
//	    [-decide-before before-decide.txt -load-before before-load.txt] \
//	    [-compile compile.txt] -o docs/benchmarks-scaling.svg
//
// Only the standard library: no network, nothing to install.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// point is one configuration of the scaling benchmarks.
type point struct{ groups, depth, entries, queues int }

// base is the point every axis starts from; see scaleAxes in
// engine/decide_bench_test.go.
var base = point{groups: 64, depth: 1, entries: 1000, queues: 100}

type axis struct {
	name  string
	label string
	x     func(point) int
	on    func(point) bool
}

var axes = []axis{
	{"groups", "groups per user", func(p point) int { return p.groups },
		func(p point) bool {
			return p.depth == base.depth && p.entries == base.entries && p.queues == base.queues
		}},
	{"depth", "queue depth", func(p point) int { return p.depth },
		func(p point) bool {
			return p.groups == base.groups && p.entries == base.entries && p.queues == base.queues
		}},
	{"entries", "ACL entries", func(p point) int { return p.entries },
		func(p point) bool { return p.groups == base.groups && p.depth == base.depth && p.queues == base.queues }},
	{"queues", "queues (entries = max(1,000, 2 × queues))", func(p point) int { return p.queues },
		func(p point) bool {
			return p.groups == base.groups && p.depth == base.depth && p.entries == max(base.entries, 2*p.queues)
		}},
}

var line = regexp.MustCompile(`^Benchmark\w+/groups=(\d+)/depth=(\d+)/entries=(\d+)/queues=(\d+)(?:-\d+)?\s+\d+\s+(.*)$`)

// read returns the median of metric (e.g. "ns/op", "cpu-ns/op") per point
// over the benchmark lines of the files.
func read(files []string, metric string) (map[point]float64, error) {
	all := map[point][]float64{}
	for _, f := range files {
		if f == "" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			m := line.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			var p point
			p.groups, _ = strconv.Atoi(m[1])
			p.depth, _ = strconv.Atoi(m[2])
			p.entries, _ = strconv.Atoi(m[3])
			p.queues, _ = strconv.Atoi(m[4])
			fields := strings.Fields(m[5])
			for i := 0; i+1 < len(fields); i += 2 {
				if fields[i+1] == metric {
					if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
						all[p] = append(all[p], v)
					}
				}
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	out := map[point]float64{}
	for p, vs := range all {
		slices.Sort(vs)
		n := len(vs)
		out[p] = (vs[(n-1)/2] + vs[n/2]) / 2
	}
	return out, nil
}

type series struct {
	name   string
	data   map[point]float64
	color  string
	dashed bool
}

// row is one row of panels: what it shows, in which unit, from which
// series.
type row struct {
	title  string
	unit   string
	scale  float64 // divides the values (ns → µs, ms)
	series []series
}

const (
	panelW, panelH = 230.0, 170.0
	left, top      = 70.0, 75.0
	gapX, gapY     = 40.0, 95.0
)

func main() {
	decide := flag.String("decide", "", "BenchmarkDecideCached output (after)")
	decideBefore := flag.String("decide-before", "", "BenchmarkDecideCached output (before), optional")
	load := flag.String("load", "", "BenchmarkLoadScale output (after)")
	loadBefore := flag.String("load-before", "", "BenchmarkLoadScale output (before), optional")
	compile := flag.String("compile", "", "BenchmarkCompileScale output, optional: a third row")
	out := flag.String("o", "docs/benchmarks-scaling.svg", "SVG to write")
	title := flag.String("title", "usher: what a decision and a load cost as a configuration grows", "chart title")
	flag.Parse()
	if *decide == "" || *load == "" {
		log.Fatal("benchchart: -decide and -load are required")
	}
	must := func(m map[point]float64, err error) map[point]float64 {
		if err != nil {
			log.Fatal(err)
		}
		return m
	}
	rows := []row{
		{title: "decision for a cached user (engine.Check)", unit: "ns", scale: 1, series: []series{
			{"after, thread CPU", must(read([]string{*decide}, "cpu-ns/op")), "#1f77b4", false},
			{"after, wall", must(read([]string{*decide}, "ns/op")), "#9ecae1", false},
			{"before, thread CPU", must(read([]string{*decideBefore}, "cpu-ns/op")), "#d62728", true},
			{"before, wall", must(read([]string{*decideBefore}, "ns/op")), "#fc9272", true},
		}},
		{title: "load: parse, validate, lint, compile, engine", unit: "ms", scale: 1e6, series: []series{
			{"after", must(read([]string{*load}, "ns/op")), "#1f77b4", false},
			{"before", must(read([]string{*loadBefore}, "ns/op")), "#d62728", true},
		}},
	}
	if *compile != "" {
		rows = append(rows, row{title: "of which the policy: Compile and Prepare", unit: "ms", scale: 1e6, series: []series{
			{"after", must(read([]string{*compile}, "ns/op")), "#1f77b4", false},
		}})
	}
	svg := draw(*title, rows)
	if err := os.WriteFile(*out, []byte(svg), 0o644); err != nil {
		log.Fatal(err)
	}
}

func draw(title string, rows []row) string {
	width := left + float64(len(axes))*(panelW+gapX)
	height := top + float64(len(rows))*(panelH+gapY) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(title))
	for ri, r := range rows {
		y0 := top + float64(ri)*(panelH+gapY)
		// One y range per row, so the panels of a row compare.
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range r.series {
			for _, v := range s.data {
				lo, hi = math.Min(lo, v/r.scale), math.Max(hi, v/r.scale)
			}
		}
		if math.IsInf(lo, 1) {
			continue
		}
		ylo, yhi := math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if ylo == yhi {
			yhi *= 10
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="bold">%s (%s, log scale)</text>`+"\n", left, y0-10, esc(r.title), r.unit)
		for ai, a := range axes {
			x0 := left + float64(ai)*(panelW+gapX)
			panel(&b, x0, y0, a, r, ylo, yhi)
		}
		// Legend
		lx := left + float64(len(axes))*(panelW+gapX) - 210
		for si, s := range r.series {
			if len(s.data) == 0 {
				continue
			}
			ly := y0 - 48 + float64(si)*11
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2"%s/>`, lx, ly, lx+20, ly, s.color, dash(s.dashed))
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", lx+25, ly+4, esc(s.name))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func panel(b *strings.Builder, x0, y0 float64, a axis, r row, ylo, yhi float64) {
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", x0, y0, panelW, panelH)
	// x range over every series' points on this axis
	var xs []int
	for _, s := range r.series {
		for p := range s.data {
			if a.on(p) && !slices.Contains(xs, a.x(p)) {
				xs = append(xs, a.x(p))
			}
		}
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		return
	}
	xlo, xhi := math.Log10(float64(xs[0])), math.Log10(float64(xs[len(xs)-1]))
	if xhi == xlo {
		xhi = xlo + 1
	}
	px := func(x int) float64 { return x0 + 10 + (math.Log10(float64(x))-xlo)/(xhi-xlo)*(panelW-20) }
	py := func(v float64) float64 {
		return y0 + panelH - (math.Log10(v)-math.Log10(ylo))/(math.Log10(yhi)-math.Log10(ylo))*panelH
	}
	// y grid: decades
	for d := ylo; d <= yhi*1.0001; d *= 10 {
		y := py(d)
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`, x0, y, x0+panelW, y)
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, y+4, num(d))
	}
	for _, x := range xs {
		label := strconv.Itoa(x)
		if x >= 10000 {
			label = num(float64(x))
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`, px(x), y0+panelH+14, label)
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x0+panelW/2, y0+panelH+30, esc(a.label))
	for _, s := range r.series {
		var pts []string
		for _, x := range xs {
			for p, v := range s.data {
				if a.on(p) && a.x(p) == x {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(v/r.scale)))
					fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, px(x), py(v/r.scale), s.color)
				}
			}
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash(s.dashed))
		}
	}
}

func dash(d bool) string {
	if d {
		return ` stroke-dasharray="5,3"`
	}
	return ""
}

func num(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
