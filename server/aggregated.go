package server

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API usher serves to the aggregation layer (Options.AggregatedAPI):
// POST accessreviews takes and answers what /v1/access does.
const (
	aggregatedGroup        = "access.usher.io"
	AggregatedGroupVersion = aggregatedGroup + "/v1alpha1"
)

// discovery answers the aggregation layer's discovery of the group and
// its version (the APIService is available once it does).
var discovery = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: AggregatedGroupVersion, Version: "v1alpha1"}
	var v any = &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: aggregatedGroup,
		Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
	if r.URL.Path == "/apis/"+AggregatedGroupVersion {
		v = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: AggregatedGroupVersion,
			APIResources: []metav1.APIResource{{Name: "accessreviews", SingularName: "accessreview", Kind: "AccessReview", Verbs: []string{"create"}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
})
