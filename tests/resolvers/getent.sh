#!/usr/bin/env bash
# glibc through getent, for the resolver matrix (tests/resolvers.rs):
# `getent.sh hosts` (gethostbyname2: AF_INET6 first, AF_INET only when
# there is no IPv6 address; gethostbyaddr for "ptr") or `getent.sh ahosts`
# (getaddrinfo AF_UNSPEC with AI_ADDRCONFIG). Reads "ID KIND NAME" lines on
# stdin and prints "ID MILLISECONDS ok VALUE..." or "ID MILLISECONDS err
# fail ...": getent's exit status 2 is all it says of a failure, so it
# cannot tell "not found" from "try again".
set -u
mode=$1
while read -r id kind name; do
  case "$mode/$kind" in
    */host | hosts/ptr) ;;
    *) continue ;;
  esac
  start=$(date +%s%N)
  out=$(getent "$mode" "$name")
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  if [ "$rc" != 0 ]; then
    echo "$id $ms err fail getent exit $rc"
  elif [ "$kind" = ptr ]; then
    echo "$id $ms ok" $(echo "$out" | awk '{for (i = 2; i <= NF; i++) print $i}')
  else
    echo "$id $ms ok" $(echo "$out" | awk '{print $1}')
  fi
done
