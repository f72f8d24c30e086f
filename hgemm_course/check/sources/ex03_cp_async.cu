// Exercise 03, kernel: rung 03's copies (hgemm_course/library/kernels/k03_wmma.cu and ptx_snippets/cp_async.cuh).
//
// This file is the rung-03 kernel with its copy header, cp_async.cuh, written into it, and the PTX cut out:
// the inline-asm statements of cp_async_16, cp_async_16_zfill, cp_async_commit_group and cp_async_wait_group
// (the instruction, its operands and their constraints), and the ring's bookkeeping at the top of the K loop
// that uses them. Fill in the five marked regions (BEGIN SOLUTION .. END SOLUTION). The facts you need:
//
//   inline asm   asm volatile("instruction %0, ...;" :: inputs); %n is the n-th operand; a constraint names the
//                kind: "r" a 32-bit register, "l" a 64-bit one, "n" an immediate the compiler writes into the
//                instruction. CUDA's "Inline PTX Assembly in CUDA" has the rest.
//   cp.async     a thread's copies run in the background until it waits for them; it closes the copies issued
//                since the last close into a group, and waits until at most N of its groups are still in
//                flight. A wait covers this thread's copies only. PTX ISA: "Data Movement and Conversion
//                Instructions: cp.async", "cp.async.commit_group", "cp.async.wait_group".
//   the ring     slice kt of K lives in stage kt % STAGES; the prologue copies slices 0 .. STAGES - 2, one
//                group each, and the compute of slice kt reads stage kt % STAGES right after your region.
//
// Check it:  hgemm-course check ex03_cp_async
//   (checks ./ex03_cp_async.cu, else ./exercises/ex03_cp_async.cu, else the course's copy; it prints which)
//   your own copy:     hgemm-course check ex03_cp_async --path my_ex03.cu
//   or in a notebook:  from hgemm_course.check import check; print(check("ex03_cp_async"))
// The checker compiles the file for the GPU here if it runs rung 03 (else for the recorded H200), reads the PTX
// your four functions compile to (which operand each argument becomes), then plays your bookkeeping through a
// model of the ring: which groups each wait leaves in flight, what each stage holds when it is read and
// refilled. On such a GPU it also runs your kernel and compares C, else it could not check it.
// INSERT kernels/k03_wmma.cu; inline cp_async.cuh; solve 2
