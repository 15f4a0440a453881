// A client that sends a review again after a 429 the way client-go did before Kubernetes 1.26 (the webhook client of
// kube-apiserver 1.20 to 1.25): one bytes.Reader for the body, rewound with Seek(0, 0) once the 429's body has been
// read, and a new request made from it after the wait. Go's transport may still be writing the first request's body
// from that reader when the answer arrives; if it goes on after the rewind, the second request carries the body's
// tail, or nothing. Built and run by test/integration/hostile-input.test.ts against a gateway it started; prints
// one JSON line.
//
// It waits on the gateway's `admission_gateway_inflight_bytes` gauge, not on time: for the held bytes to be weighed
// before a review is sent, and for them to be given back before it is sent again.
//
//	go run test/helpers/rewound-retry-client.go -addr 127.0.0.1:8443 -ca ca.crt -metrics http://127.0.0.1:8080/metrics \
//	  -attempts 30 -pad 7000000 -hold 6000000
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// review is an AdmissionReview of a ConfigMap whose data holds `pad` bytes.
func review(pad int) []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{` +
		`"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","kind":{"group":"","version":"v1","kind":"ConfigMap"},` +
		`"resource":{"group":"","version":"v1","resource":"configmaps"},"name":"b","namespace":"default",` +
		`"operation":"CREATE","userInfo":{"username":"admin"},"object":{"apiVersion":"v1","kind":"ConfigMap",` +
		`"metadata":{"name":"b","namespace":"default"},"data":{"pad":"` + strings.Repeat("y", pad) + `"}},` +
		`"oldObject":null,"dryRun":false}}`)
}

// hold opens a connection that sends `n` bytes of a body declared 100 bytes longer and stalls: what has arrived
// is held in the gateway's memory budget until the connection closes.
func hold(addr string, config *tls.Config, n int) (*tls.Conn, error) {
	c, err := tls.Dial("tcp", addr, config)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "POST /mutate HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", n+100)
	_, err = c.Write(bytes.Repeat([]byte(" "), n))
	return c, err
}

var inflightLine = regexp.MustCompile(`(?m)^admission_gateway_inflight_bytes (\S+)$`)

// waitInflight polls the gateway's metrics until the bytes its reviews hold satisfy `ok`, for 30 s at most.
func waitInflight(client *http.Client, url string, ok func(float64) bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		text, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if m := inflightLine.FindSubmatch(text); m != nil {
			if held, err := strconv.ParseFloat(string(m[1]), 64); err == nil && ok(held) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("admission_gateway_inflight_bytes: still not as awaited after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type result struct {
	Attempts  int            `json:"attempts"`
	Shed      int            `json:"shed"`
	WrongBody int            `json:"wrongBody"`
	Retried   map[string]int `json:"retried"`
	Errors    []string       `json:"errors"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "the gateway's webhook address")
	attempts := flag.Int("attempts", 60, "reviews sent")
	pad := flag.Int("pad", 700000, "bytes of data in each review's ConfigMap")
	held := flag.Int("hold", 1000000, "bytes the holding connection sends")
	caFile := flag.String("ca", "", "the PEM file of the CA that signed the gateway's certificate (for localhost)")
	metrics := flag.String("metrics", "", "the gateway's metrics URL (its ops server)")
	flag.Parse()
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	config := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: config}}
	ops := &http.Client{}
	// Weighed at 5 bytes a byte (README, "Limits").
	heldWeight := float64(5 * *held)
	r := result{Attempts: *attempts, Retried: map[string]int{}, Errors: []string{}}
	for i := 0; i < *attempts; i++ {
		h, err := hold(*addr, config, *held)
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
			break
		}
		if err := waitInflight(ops, *metrics, func(b float64) bool { return b >= heldWeight }); err != nil {
			r.Errors = append(r.Errors, err.Error())
			h.Close()
			break
		}
		body := bytes.NewReader(review(*pad))
		for try := 0; try < 2; try++ {
			req, _ := http.NewRequest("POST", "https://"+*addr+"/mutate", body)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				r.Errors = append(r.Errors, err.Error())
				break
			}
			if try == 0 && resp.StatusCode == http.StatusTooManyRequests {
				// As client-go 1.20: the answer's body read (2 KiB at most) and closed, the reader rewound, the wait.
				io.Copy(io.Discard, io.LimitReader(resp.Body, 2<<10))
				resp.Body.Close()
				body.Seek(0, 0)
				r.Shed++
				h.Close() // room for the review sent again
				if err := waitInflight(ops, *metrics, func(b float64) bool { return b == 0 }); err != nil {
					r.Errors = append(r.Errors, err.Error())
					break
				}
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if try == 1 {
				r.Retried[fmt.Sprint(resp.StatusCode)]++
				// The gateway answers 400 to a body that is not the review: its tail, or nothing.
				if resp.StatusCode == http.StatusBadRequest {
					r.WrongBody++
				}
			}
			break
		}
		h.Close()
	}
	json.NewEncoder(os.Stdout).Encode(r)
}
