package io.jverbs.counters;

/**
 * The RDMA objects this process holds on one device, as the kernel's resource tracker lists them
 * (what {@code rdma resource show} counts, filtered by this process's id).
 *
 * @param device          the device name
 * @param queuePairs      queue pairs
 * @param completionQueues completion queues
 * @param memoryRegions   registered memory regions
 * @param protectionDomains protection domains
 */
public record ProcessResources(String device, int queuePairs, int completionQueues, int memoryRegions,
                               int protectionDomains) {
}
