package ldap_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/ldap"
)

// A resolver for an OpenLDAP directory whose groups are groupOfNames
// entries, over StartTLS, bound as a service account.
func ExampleNew() {
	r, err := ldap.New(ldap.Config{
		URLs:             []string{"ldap://ldap1.example.org", "ldap://ldap2.example.org"},
		StartTLS:         true,
		CAFile:           "/etc/usher/ldap-ca.pem",
		BindDN:           "cn=usher,ou=services,dc=example,dc=org",
		BindPasswordFile: "/var/run/secrets/ldap/password",
		UserBaseDN:       "ou=people,dc=example,dc=org",
		UserFilter:       "(&(objectClass=posixAccount)(uid={user}))",
		GroupSearch:      ldap.GroupSearchMember,
		GroupBaseDN:      "ou=groups,dc=example,dc=org",
		Timeout:          3 * time.Second,
	})
	if err != nil {
		log.Fatal(err) // e.g. ldap: bindpasswordfile: cannot read the file it names: no such file or directory
	}
	defer r.Close()

	in, err := r.Resolve(context.Background(), "alice")
	switch {
	case errors.Is(err, identity.ErrUnknownUser):
		fmt.Println("no such user")
	case err != nil:
		fmt.Println("groups unknown, deny:", err)
	default:
		fmt.Println(in) // alice [dev(ldap) ops(ldap)]
	}
}

// Validate names the offending setting.
func ExampleConfig_Validate() {
	err := ldap.Config{
		URLs:       []string{"ldaps://ldap.example.org"},
		UserBaseDN: "ou=people,dc=example,dc=org",
		UserFilter: "(uid=alice)",
	}.Validate()
	fmt.Println(err)
	// Output: ldap: userfilter "(uid=alice)" does not contain {user}, so it would match the same entries for every user
}
