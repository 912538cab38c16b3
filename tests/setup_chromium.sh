#!/usr/bin/env bash
# Test set-up for the report browser check: install Debian's chromium when it is missing.
# Idempotent; never fails the build (the browser test skips with the reason if this could not install it).
set -u
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ]; then echo "setup_chromium: not root, cannot install chromium (the browser test will skip)"; exit 0; fi
export DEBIAN_FRONTEND=noninteractive
( apt-get update -qq && apt-get install -y -qq chromium >/dev/null ) 2>&1 | tail -3 || true
command -v chromium >/dev/null 2>&1 && echo "setup_chromium: installed $(chromium --version 2>/dev/null)" || echo "setup_chromium: chromium not installed"
exit 0
