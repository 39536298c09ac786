//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Histogram is the cumulative bucket counts of one Prometheus histogram
// (summed over the series a filter selected), keyed by upper bound; +Inf is
// math.Inf(1). Sum is the sum of the observations, in the metric's unit.
type Histogram struct {
	Buckets map[float64]float64
	Sum     float64
}

// ParseHistogram reads the Prometheus text exposition in text and returns
// the histogram name (its NAME_bucket and NAME_sum series), summed over every
// series whose labels include all of match (label name to value). Series of
// other metrics and those match excludes are skipped.
func ParseHistogram(text, name string, match map[string]string) (Histogram, error) {
	h := Histogram{Buckets: map[float64]float64{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, name+"_") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		metric, labels, err := splitSeries(series)
		if err != nil {
			return h, err
		}
		if metric != name+"_bucket" && metric != name+"_sum" {
			continue
		}
		if !matches(labels, match) {
			continue
		}
		// A timestamp may follow the value.
		value, _, _ = strings.Cut(value, " ")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return h, fmt.Errorf("e2e: metric line %q: %w", line, err)
		}
		if metric == name+"_sum" {
			h.Sum += v
			continue
		}
		le, err := strconv.ParseFloat(labels["le"], 64) // "+Inf" parses as +Inf
		if err != nil {
			return h, fmt.Errorf("e2e: metric line %q: le: %w", line, err)
		}
		h.Buckets[le] += v
	}
	return h, sc.Err()
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// splitSeries splits `name{a="x",b="y"}` into the name and its labels.
func splitSeries(s string) (string, map[string]string, error) {
	name, rest, ok := strings.Cut(s, "{")
	labels := map[string]string{}
	if !ok {
		return s, labels, nil
	}
	rest = strings.TrimSuffix(rest, "}")
	for rest != "" {
		k, after, ok := strings.Cut(rest, `="`)
		if !ok {
			return "", nil, fmt.Errorf("e2e: metric series %q: bad labels", s)
		}
		var b strings.Builder
		i := 0
		for ; i < len(after) && after[i] != '"'; i++ {
			if after[i] == '\\' && i+1 < len(after) {
				i++
				switch after[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(after[i])
				}
				continue
			}
			b.WriteByte(after[i])
		}
		if i >= len(after) {
			return "", nil, fmt.Errorf("e2e: metric series %q: unterminated label value", s)
		}
		labels[strings.TrimPrefix(k, ",")] = b.String()
		rest = strings.TrimPrefix(after[i+1:], ",")
	}
	return name, labels, nil
}

// Sub returns h minus before: what was observed between two scrapes.
func (h Histogram) Sub(before Histogram) Histogram {
	d := Histogram{Buckets: map[float64]float64{}, Sum: h.Sum - before.Sum}
	for le, n := range h.Buckets {
		d.Buckets[le] = n - before.Buckets[le]
	}
	return d
}

// Add returns h plus o: two windows' observations together.
func (h Histogram) Add(o Histogram) Histogram {
	d := Histogram{Buckets: map[float64]float64{}, Sum: h.Sum + o.Sum}
	for le, n := range h.Buckets {
		d.Buckets[le] += n
	}
	for le, n := range o.Buckets {
		d.Buckets[le] += n
	}
	return d
}

// Count is the number of observations (the +Inf bucket).
func (h Histogram) Count() float64 { return h.Buckets[math.Inf(1)] }

// Mean is Sum/Count, or NaN without observations.
func (h Histogram) Mean() float64 {
	if h.Count() == 0 {
		return math.NaN()
	}
	return h.Sum / h.Count()
}

// Quantile estimates the q-quantile the way PromQL's histogram_quantile
// does: linear interpolation inside the bucket the rank falls in (from 0
// for the first bucket). A rank in the +Inf bucket returns the highest
// finite bound. It returns NaN without observations.
func (h Histogram) Quantile(q float64) float64 {
	bounds := make([]float64, 0, len(h.Buckets))
	for le := range h.Buckets {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	total := h.Count()
	if total <= 0 || len(bounds) == 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, le := range bounds {
		n := h.Buckets[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return prevBound
			}
			if n == prevCount {
				return le
			}
			return prevBound + (le-prevBound)*(rank-prevCount)/(n-prevCount)
		}
		prevBound, prevCount = le, n
	}
	return prevBound
}
