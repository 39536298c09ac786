package policytest

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub test
// reporters): one testsuite per test file, one testcase per case, a
// failure element with the problems and the trail.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// WriteJUnit writes r as JUnit XML.
func (rep Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Name: "usher test", Tests: rep.Passed + rep.Failed, Failures: rep.Failed}
	var total float64
	for _, f := range rep.Files {
		s := junitSuite{Name: f.File, Tests: len(f.Cases)}
		var st float64
		for _, c := range f.Cases {
			secs := c.Elapsed.Seconds()
			st += secs
			jc := junitCase{Name: c.Name, Classname: f.File, Time: fmt.Sprintf("%.3f", secs)}
			if !c.Passed {
				s.Failures++
				var text strings.Builder
				fmt.Fprintf(&text, "%s:%d\n", f.File, c.Line)
				for _, p := range c.Problems {
					fmt.Fprintln(&text, p)
				}
				if c.Reproduce != "" {
					fmt.Fprintf(&text, "$ %s\n", c.Reproduce)
				}
				text.WriteString(c.Trail)
				jc.Failure = &junitFailure{Message: strings.Join(c.Problems, "; "), Type: c.Kind, Text: text.String()}
			}
			s.Cases = append(s.Cases, jc)
		}
		s.Time = fmt.Sprintf("%.3f", st)
		total += st
		out.Suites = append(out.Suites, s)
	}
	out.Time = fmt.Sprintf("%.3f", total)
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, b)
	return err
}
