package ldap

// Stats are the Resolver's counters since New.
type Stats struct {
	// Dials counts connections opened and bound; DialFailures counts
	// attempts that failed, one per server tried.
	Dials, DialFailures uint64
	OpenConns           int // idle or in use
	Searches            uint64
}

// Stats returns the counters.
func (r *Resolver) Stats() Stats {
	return Stats{
		Dials:        r.stats.dials.Load(),
		DialFailures: r.stats.dialFailures.Load(),
		OpenConns:    r.pool.open(),
		Searches:     r.stats.searches.Load(),
	}
}

// open returns the number of connections idle or in use.
func (p *pool) open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) + len(p.slots)
}
