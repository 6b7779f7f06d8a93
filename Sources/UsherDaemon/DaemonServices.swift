import Logging
import NIOPosix
import ServiceLifecycle
import UsherCore

// The daemon's long-running services besides the servers (Daemon.swift starts them in one ServiceGroup).

/// Runs the refresh scheduler: one loop for every user's token deadlines.
struct RefreshService: Service {
    let registry: SessionRegistry

    func run() async throws {
        let registry = self.registry
        await cancelWhenGracefulShutdown {
            await registry.scheduler.run { userID in await registry.deadlineReached(for: userID) }
        }
    }
}

/// Keeps systemd's `STATUS=` line current (`2 users logged in, active: joe@example.com`) and says `STOPPING=1` as
/// soon as a graceful shutdown begins.
struct SystemdStatusService: Service {
    let registry: SessionRegistry
    let logger: Logger

    func currentStatus() async -> String {
        let snapshot = await self.registry.snapshot()
        let users = snapshot.loggedIn == 1 ? "1 user logged in" : "\(snapshot.loggedIn) users logged in"
        guard let active = snapshot.activeUserLabel else { return snapshot.loggedIn == 0 ? "no user logged in" : users }
        return "\(users), active: \(active)"
    }

    func run() async throws {
        let (_, subscription) = await self.registry.subscribe(
            filter: [.userLoggedIn, .userLoggedOut, .userRemoved, .userChanged, .activeUserChanged]
        )
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                var last = await self.currentStatus()
                for await _ in subscription.events {
                    let status = await self.currentStatus()
                    if status != last {
                        Systemd.status(status)
                        last = status
                    }
                }
            }
        } onGracefulShutdown: {
            Systemd.stopping()
        }
        self.registry.events.cancel(subscription.id)
    }
}

/// Pings systemd's watchdog at half its interval, but only after the registry actor and an event loop have both
/// answered: a daemon whose request machinery is wedged stops pinging and is restarted.
struct WatchdogService: Service {
    let interval: Duration
    let registry: SessionRegistry

    func run() async throws {
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                _ = await self.registry.currentGeneration
                guard (try? await eventLoop.submit {}.get()) != nil else { return }
                Systemd.watchdogPing()
                try? await Task.sleep(for: self.interval / 2)
            }
        }
    }
}
