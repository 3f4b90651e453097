package io.jverbs.counters;

/**
 * A counter that could not be read this time (an unreadable or vanished file, a value such as
 * {@code N/A (no PMA)}, a netlink error). The rest of the snapshot is still valid.
 *
 * @param name    the counter's name, or the directory or request that failed
 * @param group   the group it belongs to
 * @param where   the file or the netlink request
 * @param message what went wrong, for a person
 */
public record CounterError(String name, CounterGroup group, String where, String message) {
}
