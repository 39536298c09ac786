package settings_test

import (
	"fmt"

	"github.com/usherhq/usher/admission/settings"
)

func ExampleConfig_Warnings() {
	c := settings.Config{AccessControl: settings.AccessControl{ExternalGroups: settings.Patterns{"^trusted$|admins"}}}
	for _, w := range c.Warnings() {
		fmt.Println(w)
	}
	// Output:
	// admissionController.accessControl.externalGroups: alternative "admins" of pattern "^trusted$|admins" is not anchored: it also trusts "notadmins"; write "^trusted$|^admins$"
}
