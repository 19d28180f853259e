import PushConsole
import PushRuntime

/// The console service: server-rendered pages for the people who are not on the command line
/// (port 8083; docs/console.md) behind the admin token, reading the analysts' tables, and the
/// shared operations endpoints (port 9106).
@main
enum ConsoleMain {
    static func main() async {
        await ServiceRuntime.main(service: "console", defaultOpsPort: 9106) { runtime in
            let environment = EnvironmentSettings()
            guard let secret = try AdminToken.secret(fromEnvironment: environment.values) else {
                throw ConfigurationError("the console needs PUSH_ADMIN_TOKEN or PUSH_ADMIN_TOKEN_FILE: people sign in with it")
            }
            return try ConsoleApplication.build(
                adminToken: secret, settings: try ConsoleSettings(environment: environment), postgres: runtime.postgres,
                server: runtime.configuration.httpServer, logger: runtime.logger)
        }
    }
}
