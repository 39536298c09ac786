package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/usherhq/usher/config"
)

// outputHelp is the help of the decision commands' -o flag.
const outputHelp = "output `FORMAT`: text, json or yaml (json and yaml: one decision object, docs/decision.schema.json; the exit status is the same in every format)"

// outputFlag is -o / --output of the decision commands.
type outputFlag string

func (o *outputFlag) String() string { return string(*o) }

func (o *outputFlag) Set(s string) error {
	switch s {
	case "text", "json", "yaml":
		*o = outputFlag(s)
		return nil
	}
	return fmt.Errorf("want text, json or yaml, not %q", s)
}

// Type is the value's name in pflag's errors.
func (o *outputFlag) Type() string { return "format" }

func (o *outputFlag) register(fs *pflag.FlagSet) {
	if *o == "" {
		*o = "text"
	}
	fs.VarP(o, "output", "o", outputHelp)
}

// machine reports whether the output is JSON or YAML.
func (o outputFlag) machine() bool { return o == "json" || o == "yaml" }

// write prints out (a *decision.Output, or lint's output) as JSON or
// YAML on stdout; the exit code comes from the caller.
func (o outputFlag) write(env *Env, out any) {
	b, err := json.MarshalIndent(out, "", "  ")
	if err == nil && o == "yaml" {
		b, err = yaml.JSONToYAML(b)
	} else if err == nil {
		b = append(b, '\n')
	}
	if err != nil {
		// Unreachable: the types are plain data.
		env.errorf("%v", err)
		return
	}
	env.Stdout.Write(b)
}

// sarif is a SARIF 2.1.0 log of diags, as code scanning reads it: a rule
// for each code (config.Codes), a result for each diagnostic.
func sarif(diags []config.Diagnostic) any {
	type obj = map[string]any
	text := func(s string) obj { return obj{"text": s} }
	rules, results, index := []obj{}, []obj{}, map[string]int{}
	for _, d := range diags {
		i, ok := index[d.Code]
		if !ok {
			i, index[d.Code] = len(rules), len(rules)
			rules = append(rules, obj{"id": d.Code, "shortDescription": text(config.Codes[d.Code])})
		}
		uri := &url.URL{Path: filepath.ToSlash(d.File)}
		if filepath.IsAbs(d.File) {
			uri.Scheme = "file"
		}
		loc := obj{"artifactLocation": obj{"uri": uri.String()}}
		if d.Line > 0 {
			loc["region"] = obj{"startLine": d.Line, "startColumn": max(d.Col, 1)}
		}
		level, _ := d.Severity.MarshalText()
		results = append(results, obj{"ruleId": d.Code, "ruleIndex": i, "level": string(level), "message": text(d.Msg),
			"locations": []obj{{"physicalLocation": loc}}})
	}
	driver := obj{"name": "usher", "informationUri": "https://github.com/usherhq/usher", "version": CurrentBuild().Version, "rules": rules}
	return obj{"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
		"runs": []obj{{"tool": obj{"driver": driver}, "results": results}}}
}
