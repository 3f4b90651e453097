//! Runs on the device the Soft-RoCE action names (JVERBS_TEST_DEVICE, JVERBS_TEST_GID_INDEX):
//! fails, rather than skips, when they are not set.

#[test]
fn the_device_has_the_gid_the_action_names() {
    let device = std::env::var("JVERBS_TEST_DEVICE").expect("JVERBS_TEST_DEVICE is not set");
    let index: i32 = std::env::var("JVERBS_TEST_GID_INDEX")
        .expect("JVERBS_TEST_GID_INDEX is not set")
        .parse()
        .expect("JVERBS_TEST_GID_INDEX is not a number");
    let gid = rxe_example::probe(&device, index).unwrap_or_else(|e| panic!("{device}: {e}"));
    assert!(gid.iter().any(|&b| b != 0), "{device}: GID {index} is all zeros");
    println!("rxe-example: {device} GID {index} = {:02x?}", gid);
}
