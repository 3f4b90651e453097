package io.jverbs;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * One entry of a port's GID table.
 *
 * @param index the GID index
 * @param bytes the 16 bytes of the GID (a copy is kept)
 * @param type  the type sysfs names ({@code "RoCE v2"}, {@code "IB/RoCE v1"}), or "" when unknown
 */
public record Gid(int index, byte[] bytes, String type) {
    /**
     * Validates and copies.
     *
     * @throws IllegalArgumentException when {@code bytes} is not 16 bytes long
     */
    public Gid {
        if (bytes.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, not " + bytes.length);
        }
        bytes = bytes.clone();
    }

    /**
     * Returns the GID bytes.
     *
     * @return a copy of the 16 bytes
     */
    @Override
    public byte[] bytes() {
        return bytes.clone();
    }

    /**
     * Returns whether every byte is zero (an unused table entry).
     *
     * @return true for the all-zero GID
     */
    public boolean isEmpty() {
        for (byte b : bytes) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Returns whether this is a RoCE v2 entry.
     *
     * @return true when sysfs calls it RoCE v2
     */
    public boolean isRoceV2() {
        return type.equalsIgnoreCase("RoCE v2");
    }

    /**
     * Returns whether the GID is an IPv4-mapped address ({@code ::ffff:a.b.c.d}).
     *
     * @return true for an IPv4-mapped GID
     */
    public boolean isIpv4Mapped() {
        for (int i = 0; i < 10; i++) {
            if (bytes[i] != 0) {
                return false;
            }
        }
        return bytes[10] == (byte) 0xff && bytes[11] == (byte) 0xff;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Gid g && g.index == index && Arrays.equals(g.bytes, bytes) && g.type.equals(type);
    }

    @Override
    public int hashCode() {
        return 31 * index + Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        String hex = HexFormat.of().formatHex(bytes);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 32; i += 4) {
            s.append(i == 0 ? "" : ":").append(hex, i, i + 4);
        }
        return "gid[" + index + "] " + s + (type.isEmpty() ? "" : " (" + type + ")");
    }
}
