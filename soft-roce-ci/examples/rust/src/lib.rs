//! The Rust example of the Soft-RoCE action's README: opens an RDMA device by name through
//! libibverbs, reads one of its GIDs and allocates a protection domain.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};

#[repr(C)]
pub struct IbvDevice {
    _opaque: [u8; 0],
}

#[link(name = "ibverbs")]
extern "C" {
    fn ibv_get_device_list(num_devices: *mut c_int) -> *mut *mut IbvDevice;
    fn ibv_free_device_list(list: *mut *mut IbvDevice);
    fn ibv_get_device_name(device: *mut IbvDevice) -> *const c_char;
    fn ibv_open_device(device: *mut IbvDevice) -> *mut c_void;
    fn ibv_close_device(context: *mut c_void) -> c_int;
    fn ibv_query_gid(context: *mut c_void, port: u8, index: c_int, gid: *mut [u8; 16]) -> c_int;
    fn ibv_alloc_pd(context: *mut c_void) -> *mut c_void;
    fn ibv_dealloc_pd(pd: *mut c_void) -> c_int;
}

/// Opens the device called `name`, reads GID `gid_index` of port 1 and allocates and frees a
/// protection domain. Returns the GID, or the verb that failed.
pub fn probe(name: &str, gid_index: i32) -> Result<[u8; 16], String> {
    unsafe {
        let mut n: c_int = 0;
        let list = ibv_get_device_list(&mut n);
        if list.is_null() {
            return Err(format!("ibv_get_device_list: {}", std::io::Error::last_os_error()));
        }
        let mut found = std::ptr::null_mut();
        for i in 0..n as usize {
            let device = *list.add(i);
            if CStr::from_ptr(ibv_get_device_name(device)).to_str() == Ok(name) {
                found = device;
            }
        }
        let result = if found.is_null() {
            Err(format!("no device {name} among {n}"))
        } else {
            open(found, gid_index)
        };
        ibv_free_device_list(list);
        result
    }
}

unsafe fn open(device: *mut IbvDevice, gid_index: i32) -> Result<[u8; 16], String> {
    let context = ibv_open_device(device);
    if context.is_null() {
        return Err(format!("ibv_open_device: {}", std::io::Error::last_os_error()));
    }
    let mut gid = [0u8; 16];
    let result = if ibv_query_gid(context, 1, gid_index, &mut gid) != 0 {
        Err(format!("ibv_query_gid: {}", std::io::Error::last_os_error()))
    } else {
        let pd = ibv_alloc_pd(context);
        if pd.is_null() {
            Err(format!("ibv_alloc_pd: {}", std::io::Error::last_os_error()))
        } else {
            ibv_dealloc_pd(pd);
            Ok(gid)
        }
    };
    ibv_close_device(context);
    result
}
