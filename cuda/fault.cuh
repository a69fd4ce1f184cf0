// Device faults. A kernel fault (an illegal address, a driver Xid) leaves a sticky error on
// this process's context of the device: every later CUDA call there fails until the context
// is reset. Here: telling a sticky error from an ordinary failed call, resetting this
// process's context of one device (cudaDeviceReset acts on the calling process only; the GPU
// itself is never reset) and replacing sppark's registry entry of it, whose streams died with
// the context, and, for tests only, a kernel that faults.
#pragma once

#include <memory>
#include <utility>
#include <vector>

// True when the selected device's context holds a sticky error: two synchronisations in a row
// fail (an ordinary asynchronous error is reported once, then cleared).
static bool context_faulted()
{
    if (cudaDeviceSynchronize() == cudaSuccess)
        return false;
    (void)cudaGetLastError();
    return cudaDeviceSynchronize() != cudaSuccess;
}

// An object whose destructor synchronises the device and throws when that fails (sppark's
// msm_t): a throw from a destructor terminates the process, so after a fault the object is
// abandoned instead of destroyed. Its device memory goes with the context reset; its host
// part (a few hundred bytes) is leaked once per fault.
template<class T>
class abandoned_on_fault {
    std::unique_ptr<T> object;
public:
    template<class... Args>
    explicit abandoned_on_fault(Args&&... args) : object(new T(std::forward<Args>(args)...)) {}
    abandoned_on_fault(const abandoned_on_fault&) = delete;
    abandoned_on_fault& operator=(const abandoned_on_fault&) = delete;
    ~abandoned_on_fault()
    {
        if (context_faulted())
            (void)object.release();
    }
    T* operator->() { return object.get(); }
};

// Resets this process's context of device `index` and replaces sppark's registry entry of it
// (which select_gpu hands out) with a new one, whose streams live in the new context.
// Everything cuzk held on the device, pinned host memory of the context included, must be
// freed first. The old entry is left allocated, never destroyed: its streams died with the
// context (destroying them would hand dead handles to the driver), and its idle host threads
// stay parked, a few per fault. If any step fails, the registry is left as it was.
static void reset_device(int index)
{
    const gpu_t& old = selected_device(index);
    CUDA_OK(cudaDeviceReset());
    void* probe = nullptr;
    CUDA_OK(cudaMalloc(&probe, 256));
    CUDA_OK(cudaMemset(probe, 0, 256));
    CUDA_OK(cudaFree(probe));
    CUDA_OK(cudaDeviceSynchronize());
    const gpu_t* fresh = new gpu_t(old.id(), old.cid(), old.props());
    // The registry hands its entries out as const; this is the one place that replaces one.
    const_cast<std::vector<const gpu_t*>&>(all_gpus())[index] = fresh;
    fresh->select();
}

#ifdef CUZK_FAULT_INJECTION
// Writes through an address no allocation has: an illegal memory access, a sticky error.
__global__ void write_to_unmapped_address(volatile uint64_t* address)
{
    *address = 1;
}

// Launches the faulting kernel on `gpu`'s stream without waiting: the fault surfaces in
// whichever CUDA call of the pipeline comes next, as a real one would.
static void inject_fault(const gpu_t& gpu)
{
    gpu.select();
    write_to_unmapped_address<<<1, 1, 0, (cudaStream_t)gpu>>>((volatile uint64_t*)0x10);
    CUDA_OK(cudaGetLastError());
}
#endif
