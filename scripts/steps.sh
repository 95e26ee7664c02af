# Sourced by scripts/check and scripts/check-long: step headers and timed
# commands.

step() { printf '\n== %s\n' "$*"; }

# timed CMD ARGS... runs the command and prints its wall and CPU seconds
# (user+system, children included) when /usr/bin/time is there.
timed() {
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "   (%e s wall, %U s user + %S s system CPU)" "$@"
  else
    "$@"
  fi
}
