package auth

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case NoOpinion:
		return "no opinion"
	}
	return "deny"
}
