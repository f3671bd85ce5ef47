/*
 * The amd64 guest's laptop battery (scripts/test-vm.sh): qemu's pc has none, and Debian's kernel has no
 * test_power. This SSDT describes one as a laptop's firmware does (a Control Method Battery, PNP0C0A, and an AC
 * adapter, ACPI0003, unplugged); scripts/vm.sh (VM_ACPI_EXTRA) compiles it with iasl and hands it to the kernel
 * in an early initrd (kernel/firmware/acpi/, CONFIG_ACPI_TABLE_UPGRADE), and the kernel's own acpi battery and ac
 * drivers make /sys/class/power_supply/BAT0 and ADP1 from it: 21.6 of 54 Wh (40 %), discharging at 7 W.
 * Static: the level does not move while the guest runs or sleeps.
 */
DefinitionBlock ("", "SSDT", 2, "DOSETP", "BATTERY", 0x00000001)
{
    Scope (\_SB)
    {
        Device (BAT0)
        {
            Name (_HID, EisaId ("PNP0C0A"))
            Name (_UID, One)
            Name (_PCL, Package (One) { \_SB })
            Method (_STA, 0, NotSerialized) { Return (0x1F) }
            Method (_BIF, 0, NotSerialized)
            {
                Return (Package (0x0D)
                {
                    Zero,       /* power unit: mW, mWh */
                    57000,      /* design capacity */
                    54000,      /* last full charge capacity */
                    One,        /* rechargeable */
                    11550,      /* design voltage, mV */
                    2700,       /* design capacity of warning */
                    540,        /* design capacity of low */
                    One,        /* granularity 1 */
                    One,        /* granularity 2 */
                    "DoseTap VM",
                    "0001",
                    "LION",
                    "QEMU"
                })
            }
            Method (_BST, 0, NotSerialized)
            {
                Return (Package (0x04)
                {
                    One,        /* discharging */
                    7000,       /* present rate, mW */
                    21600,      /* remaining capacity, mWh */
                    11400       /* present voltage, mV */
                })
            }
        }

        Device (ADP1)
        {
            Name (_HID, "ACPI0003")
            Name (_PCL, Package (One) { \_SB })
            Method (_STA, 0, NotSerialized) { Return (0x0F) }
            Method (_PSR, 0, NotSerialized) { Return (Zero) }   /* unplugged */
        }
    }
}
