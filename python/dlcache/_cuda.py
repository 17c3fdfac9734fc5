# SPDX-License-Identifier: MIT
"""The CUDA path: ring slots registered as page-locked, async copies.

Each ring slot the loader hands out is registered once with CUDA
(cudaHostRegister through torch's cudart), so a host-to-device copy from it
is a true DMA that does not block the Python thread. A batch is copied on
a side stream; the uint8 -> float32 change and the normalisation run there
too, as one kernel (addcmul with type promotion); the caller's stream waits
for that stream's event, and the slot goes back to the ring once the event
has completed. Imported only when device is "cuda".
"""

import torch


def _cuda_ok(err):
    return int(getattr(err, "value", err)) == 0


class CudaStage:
    def __init__(self, device, loader):
        self.device = device
        self.loader = loader	# the C loader whose slots are staged
        self.cudart = torch.cuda.cudart()
        with torch.cuda.device(device):
            self.stream = torch.cuda.Stream(device)
        self.registered = {}	# slot address -> bytes
        self.pending = []	# (RawBatch, Event) whose copy may be in flight

    def _register(self, addr):
        """Page-lock the ring slot at @addr with CUDA, once."""
        if addr in self.registered:
            return
        # the whole slot, whatever this batch's count
        cfg = self.loader.config
        nbytes = cfg.batch_size * 3 * cfg.transform.out_w * cfg.transform.out_h
        # On failure a copy from pageable memory still works, only
        # synchronously: not registered, so tried again next time.
        if _cuda_ok(self.cudart.cudaHostRegister(addr, nbytes, 0)):
            self.registered[addr] = nbytes

    def stage(self, images, rb, finish):
        """Start the copy of @images (then finish(), the normalisation, on
        the device); the device tensor."""
        self._register(images.data_ptr())
        cur = torch.cuda.current_stream(self.device)
        # The side stream does not wait for the caller's queued work: the
        # copy overlaps the training step. Its tensors are allocated on it,
        # and record_stream() below covers their use on the caller's.
        with torch.cuda.device(self.device), torch.cuda.stream(self.stream):
            dev = torch.empty_like(images, device=self.device)
            dev.copy_(images, non_blocking=True)
            out = finish(dev)
            ev = torch.cuda.Event()
            ev.record(self.stream)
        cur.wait_event(ev)
        out.record_stream(cur)
        self.pending.append((rb, ev))
        return out

    def retire(self, keep=1, all=False):
        """Give back the slots whose copy is done; wait for older ones."""
        loader = self.loader
        still = []
        for i, (rb, ev) in enumerate(self.pending):
            left = len(self.pending) - i
            if all or left > keep:
                ev.synchronize()
            elif not ev.query():
                still.append((rb, ev))
                continue
            if rb in loader.held:
                loader.release(rb)
        self.pending = still

    def close(self):
        if self.loader.handle is not None:
            self.retire(all=True)
        self.pending = []
        torch.cuda.synchronize(self.device)
        for addr in self.registered:
            self.cudart.cudaHostUnregister(addr)
        self.registered.clear()
