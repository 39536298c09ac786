package cli

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
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

func (o outputFlag) machine() bool { return o == "json" || o == "yaml" }

// write prints out as indented JSON, HTML characters as they are, or YAML on stdout.
func (o outputFlag) write(env *Env, out any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // queue paths such as root.users.<user>
	err := enc.Encode(out)
	data := b.Bytes()
	if err == nil && o == "yaml" {
		data, err = yaml.JSONToYAML(data)
	}
	if err != nil {
		// Unreachable: the types are plain data.
		env.errorf("%v", err)
		return
	}
	env.Stdout.Write(data)
}
