/** A user's module that reads jverbs. */
module example.consumer {
    requires io.jverbs.highlevel;
}
