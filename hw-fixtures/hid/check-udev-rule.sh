#!/bin/sh
# Runs udev-rules/71-dosetap-hid-buttons.rules through the real udev rule engine (`udevadm test`)
# against the devices of this folder, emulated by umockdev, and checks which nodes the rule opens
# (DOSETAP_HID_BUTTON=1 and the uaccess tag) and which it leaves alone.
#
# Needs root for a private mount namespace (unshare -m): the rule is bind-mounted over the rules
# directories there, so the machine's own rules are neither read nor touched. Not part of `make test`.
#   sudo hw-fixtures/hid/check-udev-rule.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rule="$here/../../udev-rules/71-dosetap-hid-buttons.rules"
[ "$(id -u)" -eq 0 ] || { echo "run as root (for unshare -m)" >&2; exit 2; }

if [ "${1:-}" != "--inside" ]; then
    exec unshare -m "$0" --inside
fi

work=$(mktemp -d)
mounted=""
cleanup() {
    for dir in $mounted; do umount "$dir"; done
    rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/rules"
cp "$rule" "$work/rules/"
for dir in /usr/lib/udev/rules.d /lib/udev/rules.d /etc/udev/rules.d /run/udev/rules.d; do
    if [ -d "$dir" ] && ! echo " $mounted " | grep -q " $(readlink -f "$dir") "; then
        mount --bind "$work/rules" "$dir"
        mounted="$mounted $(readlink -f "$dir")"
    fi
done

uhid=/sys/devices/virtual/misc/uhid/0005:248A:8266.0004/input
# A keyboard-looking shutter, a real Bluetooth keyboard, and a remote of another name.
sed '/input24\/event4$/,/^$/ s/^E: ID_INPUT_KEY=1$/E: ID_INPUT_KEY=1\nE: ID_INPUT_KEYBOARD=1/' \
    "$here/ab-shutter3.umockdev" > "$work/shutter-as-keyboard.umockdev"
sed 's/AB Shutter3/Logi K380/g' "$work/shutter-as-keyboard.umockdev" > "$work/bt-keyboard.umockdev"
sed 's/AB Shutter3/BT Remote/g' "$here/ab-shutter3.umockdev" > "$work/other-remote.umockdev"

failed=0
check() {   # fixture devpath expected(yes|no) what
    out=$(umockdev-run -d "$1" -- udevadm test --action=add "$2" 2>&1)
    if echo "$out" | grep -q '^DOSETAP_HID_BUTTON=1$' && echo "$out" | grep -q '^TAGS=.*:uaccess:'; then got=yes; else got=no; fi
    if [ "$got" = "$3" ]; then echo "ok    $4: $got"; else echo "FAIL  $4: expected $3, got $got"; failed=1; fi
}
check "$here/ab-shutter3.umockdev" "$uhid/input24/event4" yes "AB Shutter3 (keyboard collection)"
check "$here/ab-shutter3.umockdev" "$uhid/input25/event5" yes "AB Shutter3 Consumer Control"
check "$here/ab-shutter3.umockdev" /sys/devices/pci0000:00/0000:00:14.0/usb1/1-2/1-2:1.0/0003:046D:C31C.0001/input/input7/event7 no "USB keyboard"
check "$here/ab-shutter3.umockdev" /sys/devices/virtual/input/input9/event9 no "headset AVRCP keys (uinput, no hid parent)"
check "$here/ab-shutter3.umockdev" /sys/devices/platform/i8042/serio0/input/input2/event2 no "laptop keyboard"
check "$here/classic-shutter.umockdev" /sys/devices/platform/soc/fe201000.serial/serial0/serial0-0/bluetooth/hci0/hci0:11/0005:248A:8266.0002/input/input3/event3 yes "classic (hidp) shutter"
check "$work/shutter-as-keyboard.umockdev" "$uhid/input24/event4" yes "AB Shutter3 that udev calls a keyboard"
check "$work/bt-keyboard.umockdev" "$uhid/input24/event4" no "Bluetooth keyboard"
check "$work/other-remote.umockdev" "$uhid/input25/event5" yes "another remote with keys"
exit $failed
