#pragma once
// Telling systemd (Type=notify units) where a node is in its life, through
// libsystemd's sd_notify: nothing happens when $NOTIFY_SOCKET is unset.

namespace apollo11::cli {

// "READY=1": every endpoint of the node serves.
void NotifyReady();
// "RELOADING=1" before a SIGHUP reload, "READY=1" after it.
void NotifyReloading();
void NotifyReloaded();
// "STOPPING=1": the node has begun to shut down.
void NotifyStopping();

}  // namespace apollo11::cli
