package cache

// Len returns the number of users held, expired entries included.
func (c *Cache) Len() int { return c.tab.Len() }
