package placement

// Len returns the number of rules.
func (rs *Rules) Len() int { return len(rs.rules) }
