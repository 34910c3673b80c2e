// gelf-reader: the GELF-over-UDP receiver the graylog sink tests run against (issue 28). It is
// Graylog's own Go library, github.com/Graylog2/go-gelf, doing the work (chunk reassembly,
// gzip/zlib decompression, GELF parsing); this file only prints each message it reads as one
// JSON line on stdout. The first line is {"listening":"127.0.0.1:PORT"}, so a test can start it
// on port 0 and learn the port from its output.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/Graylog2/go-gelf/gelf"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "UDP address to read GELF messages on")
	flag.Parse()
	r, err := gelf.NewReader(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gelf-reader:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"listening": r.Addr()})
	var buf bytes.Buffer
	for {
		m, err := r.ReadMessage()
		if err != nil {
			// A datagram the library refuses (bad chunk, bad JSON) is reported, never fatal:
			// the test that sent it sees it on stderr and its message missing on stdout.
			fmt.Fprintln(os.Stderr, "gelf-reader: read:", err)
			continue
		}
		buf.Reset()
		// The library's own serialiser: the additional "_" fields are merged back in.
		if err := m.MarshalJSONBuf(&buf); err != nil {
			fmt.Fprintln(os.Stderr, "gelf-reader: encode:", err)
			continue
		}
		buf.WriteByte('\n')
		if _, err := os.Stdout.Write(buf.Bytes()); err != nil {
			os.Exit(1)
		}
	}
}
