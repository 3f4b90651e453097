package io.jverbs.ibverbs;

/**
 * The device, its provider or the installed rdma-core does not offer a verb: it returned
 * {@code EOPNOTSUPP}, its provider slot is empty, or the library does not export the symbol.
 *
 * <p>Tests turn this into a skip, never a pass. Immutable; safe to share between threads.
 */
public class UnsupportedVerbException extends VerbsException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param verb   the C name of the verb
     * @param detail why it is unsupported (for example "not exported by libibverbs.so.1"), or {@code null}
     */
    public UnsupportedVerbException(String verb, String detail) {
        super(verb, Errno.EOPNOTSUPP, detail);
    }
}
