// Command quantity-oracle answers, for each quantity string it reads, what Kubernetes'
// resource.ParseQuantity makes of it: one JSON string a line on stdin, one JSON object a line
// on stdout, in the same order, flushed after every line so a caller can batch requests.
//
//	"1.5Gi"  ->  {"ok":true,"unscaled":"1610612736","scale":0}
//	"1x"     ->  {"ok":false,"error":"unable to parse quantity's suffix"}
//
// The value is exact: unscaled * 10**-scale, from q.AsDec() (inf.Dec), so a caller compares
// it digit for digit, however large or small (1e999999999 is "1" with scale -999999999).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

type answer struct {
	OK       bool   `json:"ok"`
	Unscaled string `json:"unscaled,omitempty"`
	Scale    int32  `json:"scale"`
	Error    string `json:"error,omitempty"`
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	encoder := json.NewEncoder(out)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			break
		}
		var text string
		if jsonErr := json.Unmarshal(line, &text); jsonErr != nil {
			fmt.Fprintf(os.Stderr, "quantity-oracle: not a JSON string: %q\n", line)
			os.Exit(2)
		}
		var reply answer
		if q, parseErr := resource.ParseQuantity(text); parseErr != nil {
			reply = answer{Error: parseErr.Error()}
		} else {
			dec := q.AsDec()
			reply = answer{OK: true, Unscaled: dec.UnscaledBig().String(), Scale: int32(dec.Scale())}
		}
		if encErr := encoder.Encode(reply); encErr != nil {
			os.Exit(1)
		}
		if in.Buffered() == 0 {
			if flushErr := out.Flush(); flushErr != nil {
				os.Exit(1)
			}
		}
	}
	out.Flush()
}
