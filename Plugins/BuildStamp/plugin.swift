import Foundation
import PackagePlugin

/// Writes `BuildStamp.swift` (the version of the `VERSION` file, the git commit, the build date) for
/// the target it is applied to, before every build. `scripts/build-stamp.sh` rewrites the file only
/// when the version or the commit changed, so an unchanged checkout recompiles nothing.
@main
struct BuildStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Generated")
        let root = context.package.directoryURL
        return [
            .prebuildCommand(
                displayName: "Stamping the version, commit and build date",
                executable: URL(filePath: "/bin/sh"),
                arguments: [root.appending(path: "scripts/build-stamp.sh").path, root.path, output.path],
                outputFilesDirectory: output
            ),
        ]
    }
}
