// The quantity oracle: Kubernetes' own resource.ParseQuantity behind a pipe, for
// tests/unit/test_quantity_oracle.py. apimachinery is pinned to the version the test bed's
// Kubernetes build replaces it with (../kubernetes/go.mod); build.sh checks that they agree.
module jupyter_dw/testcluster/quantity-oracle

go 1.26.0

require k8s.io/apimachinery v0.36.3

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
)
