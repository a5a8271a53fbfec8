#!/bin/bash
# sl1m.sh BIN OUT: serve-load at 1M, the server started from a sidecar with no half copy
mkdir -p /tmp/s50/sc-c
cp /tmp/s50/nohalf.sidecar /tmp/s50/sc-c/qlat-s20261017-n1000000-rs1.db.particles-rs.sidecar
sync; sleep 3
RUST_LOG=info PARTICLES_SIDECAR_DIR=/tmp/s50/sc-c $1 benchmark serve-load --store /tmp/s50/ql/stores/qlat-s20261017-n1000000-rs1.db --rates 10,20,30,40 --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out $2 > $2.out 2>&1
