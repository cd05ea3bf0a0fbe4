#pragma once
// What a process says when it dies through std::terminate (an exception that
// escaped a thread, a throw from a noexcept function): one critical log line
// naming the thread and the exception, flushed, before abort(). Without it a
// dying node leaves only "terminate called..." on stderr, if that.

namespace apollo11 {

// Installs the handler for the whole process. Call once in main, after the
// logger is set up.
void InstallTerminateHandler();

}  // namespace apollo11
