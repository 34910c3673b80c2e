module fleetctl.test/gelf-reader

go 1.21

require github.com/Graylog2/go-gelf v0.0.0-20191017102106-1550ee647df0
