package server

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Children looked up concurrently are the vector's own: every increment
// lands in the series WithLabelValues names, and each is created once.
func TestChildrenCountIntoTheVector(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"kind", "operation", "outcome"})
	m := &metrics{reviews: vec}
	labels := []reviewLabels{{"Pod", "CREATE", "patched"}, {"Job", "DELETE", "denied"}, {"other", "", "allowed"}}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				m.reviewCounter(labels[(g+i)%len(labels)]).Inc()
			}
		}()
	}
	wg.Wait()
	reg := prometheus.NewRegistry()
	reg.MustRegister(vec)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 {
		t.Fatal(mfs, err)
	}
	total := 0.0
	for _, s := range mfs[0].GetMetric() {
		total += s.GetCounter().GetValue()
	}
	if n := len(mfs[0].GetMetric()); total != 8000 || n != len(labels) {
		t.Fatalf("%v increments in %d series, want 8000 in %d", total, n, len(labels))
	}
	notCached := func(reviewLabels) prometheus.Counter { t.Fatal("the child was not kept"); return nil }
	if c := m.reviewCounters.get(labels[0], notCached); c != vec.WithLabelValues("Pod", "CREATE", "patched") {
		t.Fatal("the cached child is not the vector's")
	}
}
