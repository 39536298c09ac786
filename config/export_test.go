package config

// Default returns the embedded default configuration, without
// environment overrides.
func Default() *Config {
	c, err := Load("")
	if err != nil {
		panic("config: embedded default is invalid: " + err.Error())
	}
	return c
}
