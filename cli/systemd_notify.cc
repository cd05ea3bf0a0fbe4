#include "cli/systemd_notify.h"

#include <systemd/sd-daemon.h>

#include <string>

namespace apollo11::cli {
namespace {

void Notify(const std::string& state) { (void)sd_notify(/*unset_environment=*/0, state.c_str()); }

}  // namespace

void NotifyReady() { Notify("READY=1\nSTATUS=serving"); }
void NotifyReloading() { Notify("RELOADING=1"); }
void NotifyReloaded() { Notify("READY=1\nSTATUS=serving"); }
void NotifyStopping() { Notify("STOPPING=1\nSTATUS=stopping"); }

}  // namespace apollo11::cli
