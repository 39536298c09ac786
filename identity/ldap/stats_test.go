package ldap

import "time"

// Stats are the Resolver's counters since New.
type Stats struct {
	Lookups      uint64 // Resolve calls
	UnknownUsers uint64 // lookups that ended in identity.ErrUnknownUser
	Failures     uint64 // lookups that ended in any other error
	LookupTime   time.Duration
	// Dials counts connections opened and bound; DialFailures counts
	// attempts that failed, one per server tried.
	Dials, DialFailures uint64
	OpenConns           int // idle or in use
	Searches            uint64
}

// Stats returns the counters.
func (r *Resolver) Stats() Stats {
	return Stats{
		Lookups:      r.stats.lookups.Load(),
		UnknownUsers: r.stats.unknown.Load(),
		Failures:     r.stats.failures.Load(),
		LookupTime:   time.Duration(r.stats.nanos.Load()),
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
