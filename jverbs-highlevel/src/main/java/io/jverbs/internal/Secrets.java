package io.jverbs.internal;

import io.jverbs.Resource;
import io.jverbs.datagram.DatagramQueuePair;

/**
 * Where the packages of this module publish the internal operations their siblings call (the
 * JDK's "shared secrets"): a package registers its accessor in a static initializer of one of its
 * classes, and a caller reads it once into a {@code static final} field, e.g.
 * {@code private static final CoreAccess CORE = Secrets.core();}. Reading an accessor not yet
 * registered initializes the class that registers it first.
 *
 * <p>Thread-safe: class initialization orders the registration before any read.
 */
public final class Secrets {
    private static volatile CoreAccess core;
    private static volatile DatagramAccess datagram;

    private Secrets() {
    }

    /**
     * Registers the core's accessor; called once, by {@link Resource}'s static initializer.
     *
     * @param access the accessor
     */
    public static void setCore(CoreAccess access) {
        core = access;
    }

    /**
     * Returns the core's accessor, initializing {@link Resource} first when needed.
     *
     * @return the accessor
     */
    public static CoreAccess core() {
        CoreAccess a = core;
        if (a == null) {
            initialize(Resource.class);
            a = core;
        }
        return a;
    }

    /**
     * Registers the datagram package's accessor; called once, by {@link DatagramQueuePair}'s
     * static initializer.
     *
     * @param access the accessor
     */
    public static void setDatagram(DatagramAccess access) {
        datagram = access;
    }

    /**
     * Returns the datagram package's accessor, initializing {@link DatagramQueuePair} first when needed.
     *
     * @return the accessor
     */
    public static DatagramAccess datagram() {
        DatagramAccess a = datagram;
        if (a == null) {
            initialize(DatagramQueuePair.class);
            a = datagram;
        }
        return a;
    }

    private static void initialize(Class<?> c) {
        try {
            Class.forName(c.getName(), true, c.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }
}
