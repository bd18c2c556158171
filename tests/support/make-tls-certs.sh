#!/usr/bin/env bash
# Makes the certificates of the TLS tests in DIR (created if missing), with openssl:
#   ca.crt ca.key                 a test CA
#   server.crt server.key         the server's, signed by the CA, for 127.0.0.1, ::1 and localhost
#                                 (a client certificate too: cluster nodes show it to each other)
#   client.crt client.key         a client's, signed by the CA (mutual TLS)
#   expired-client.crt/.key       a client's, signed by the CA, that expired in 2020
#   other-ca.crt other-ca.key     an unrelated CA
#   other-client.crt/.key         a client's, signed by the unrelated CA
# Usage: make-tls-certs.sh DIR
set -euo pipefail
dir=${1:?usage: make-tls-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
command -v openssl >/dev/null || {
  echo "make-tls-certs: openssl is needed (scripts/install-deps.sh --test)" >&2
  exit 1
}

# EC keys: quick to make, and what managed services use too.
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

ca() {  # ca NAME SUBJECT
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$1.crt" 2>/dev/null
}

# sign NAME CA SUBJECT EXTENSIONS [START END]: a certificate for NAME.key, signed by CA. With
# START and END (YYYYMMDDHHMMSSZ), valid only then (openssl ca sets any dates; x509 cannot).
sign() {
  local name=$1 ca=$2 subject=$3 extensions=$4
  key "$name.key"
  openssl req -new -key "$name.key" -subj "/CN=$subject" -out "$name.csr" 2>/dev/null
  printf '%s\n' "$extensions" >"$name.ext"
  if [[ $# -ge 6 ]]; then
    mkdir -p "$name.ca"
    : >"$name.ca/index.txt"
    cat >"$name.ca/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
database = $name.ca/index.txt
new_certs_dir = $name.ca
serial = $name.ca/serial
default_md = sha256
policy = anything
copy_extensions = none
[anything]
commonName = supplied
CNF
    echo 01 >"$name.ca/serial"
    openssl ca -batch -config "$name.ca/ca.cnf" -cert "$ca.crt" -keyfile "$ca.key" \
      -startdate "$5" -enddate "$6" -extfile "$name.ext" -in "$name.csr" -out "$name.crt" \
      -notext 2>/dev/null
    rm -rf "$name.ca"
  else
    openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -sha256 \
      -days 825 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  fi
  rm -f "$name.csr" "$name.ext"
}

ca ca "redbloom test CA"
ca other-ca "unrelated test CA"
sign server ca localhost "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
extendedKeyUsage=serverAuth,clientAuth"
sign client ca "redbloom test client" "extendedKeyUsage=clientAuth"
sign expired-client ca "expired test client" "extendedKeyUsage=clientAuth" \
  20200101000000Z 20200102000000Z
sign other-client other-ca "unrelated test client" "extendedKeyUsage=clientAuth"
rm -f ./*.srl
chmod 600 ./*.key
