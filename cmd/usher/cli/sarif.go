package cli

import (
	"net/url"
	"path/filepath"

	"github.com/usherhq/usher/config"
)

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
		results = append(results, obj{"ruleId": d.Code, "ruleIndex": i, "level": d.Severity.String(), "message": text(d.Msg),
			"locations": []obj{{"physicalLocation": loc}}})
	}
	driver := obj{"name": "usher", "informationUri": "https://github.com/usherhq/usher", "version": CurrentBuild().Version, "rules": rules}
	return obj{"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
		"runs": []obj{{"tool": obj{"driver": driver}, "results": results}}}
}
