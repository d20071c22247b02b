#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# LibreOffice Writer's start-up, for record.sh: starts `lowriter` (a new
# document) and, once xdotool sees its window mapped ("LibreOffice Writer"
# in the title), kills it with SIGKILL to its process group, so that no
# shut-down I/O follows. Needs DISPLAY (record.sh --x11) and xdotool.
#   record.sh --x11 lowriter OUT.trace -- /bin/bash .../lowriter-up.sh
set -m
lowriter --norestore --nologo &
pg=$!
rc=0
xdotool search --sync --onlyvisible --name 'LibreOffice Writer' > /dev/null || rc=1
kill -KILL -- "-$pg"
wait
exit $rc
