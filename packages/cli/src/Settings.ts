import { Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { CliFailure } from "./Output.ts"

/** Where the CLI finds a server when neither `--url`, `HOSTPLANE_URL` nor a login names one: `npm start`'s address. */
export const defaultUrl = "http://127.0.0.1:8080"

/** The environment the CLI reads (the only place it reads any): `HOSTPLANE_URL`, `HOSTPLANE_TOKEN`, the config folder. */
export class CliEnv extends Context.Service<
  CliEnv,
  {
    readonly url: Option.Option<string>
    readonly token: Option.Option<Redacted.Redacted<string>>
    /** `HOSTPLANE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/hostplane`, else `%APPDATA%\hostplane` or `~/.config/hostplane`. */
    readonly configDir: string
    /** `BROWSER`: the program that opens an address, as many command-line tools read it; else the platform's opener. */
    readonly browser: Option.Option<string>
  }
>()("@hostplane/cli/Settings/CliEnv") {
  static readonly layer = Layer.effect(
    CliEnv,
    Effect.gen(function* () {
      const nonEmpty = (name: string) =>
        Config.option(Config.String(name)).pipe(Config.map(Option.filter((value) => value.trim() !== "")))
      const url = yield* nonEmpty("HOSTPLANE_URL")
      const token = yield* nonEmpty("HOSTPLANE_TOKEN")
      const explicit = yield* nonEmpty("HOSTPLANE_CONFIG_DIR")
      const xdg = yield* nonEmpty("XDG_CONFIG_HOME")
      const appData = yield* nonEmpty("APPDATA")
      const browser = yield* nonEmpty("BROWSER")
      const configDir = Option.getOrElse(explicit, () =>
        Option.isSome(xdg)
          ? Path.join(xdg.value, "hostplane")
          : process.platform === "win32" && Option.isSome(appData)
            ? Path.join(appData.value, "hostplane")
            : Path.join(Os.homedir(), ".config", "hostplane")
      )
      return CliEnv.of({ url, token: Option.map(token, Redacted.make), configDir, browser })
    })
  )
}

/** What `login` keeps: the server and its token. */
export const Credentials = Schema.Struct({
  url: Schema.String,
  token: Schema.String,
  subject: Schema.optionalKey(Schema.String),
  expiresAt: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type Credentials = typeof Credentials.Type

const credentialsFile = (dir: string) => Path.join(dir, "credentials.json")

const readJson = <S extends Schema.Top & { readonly DecodingServices: never }>(file: string, schema: S) =>
  Effect.tryPromise(() => Fs.readFile(file, "utf8")).pipe(
    Effect.option,
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.succeedNone,
        onSome: (text) =>
          Schema.decodeUnknownEffect(Schema.fromJsonString(schema))(text).pipe(
            Effect.map(Option.some),
            Effect.mapError(
              () => new CliFailure({ code: "bad_config", message: `${file} is not what hostplane wrote: remove it` })
            )
          )
      })
    )
  )

export const readCredentials = (dir: string): Effect.Effect<Option.Option<Credentials>, CliFailure> =>
  readJson(credentialsFile(dir), Credentials)

/** Stores the token readable by its owner only (folder 0700, file 0600), replacing the file in one rename. */
export const writeCredentials = (dir: string, credentials: Credentials): Effect.Effect<string, CliFailure> =>
  Effect.tryPromise({
    try: async () => {
      await Fs.mkdir(dir, { recursive: true, mode: 0o700 })
      const file = credentialsFile(dir)
      const temporary = `${file}.${process.pid}.tmp`
      await Fs.writeFile(temporary, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 })
      await Fs.chmod(temporary, 0o600)
      await Fs.rename(temporary, file)
      return file
    },
    catch: (cause) => new CliFailure({ code: "config_write_failed", message: `cannot write to ${dir}: ${cause}` })
  })

export const removeCredentials = (dir: string): Effect.Effect<boolean> =>
  Effect.promise(() =>
    Fs.rm(credentialsFile(dir)).then(
      () => true,
      () => false
    )
  )

/** `.hostplane.json`, written by `link`: the org and project a folder deploys to. */
export const LinkFile = Schema.Struct({ org: Schema.String, project: Schema.String })
export type LinkFile = typeof LinkFile.Type
export const linkFileName = ".hostplane.json"

/** The nearest `.hostplane.json` in `from` or a folder above it. */
export const findLink = (
  from: string
): Effect.Effect<Option.Option<LinkFile & { readonly file: string }>, CliFailure> =>
  Effect.gen(function* () {
    let dir = Path.resolve(from)
    for (;;) {
      const file = Path.join(dir, linkFileName)
      const link = yield* readJson(file, LinkFile)
      if (Option.isSome(link)) return Option.some({ ...link.value, file })
      const parent = Path.dirname(dir)
      if (parent === dir) return Option.none()
      dir = parent
    }
  })

export const writeLink = (dir: string, link: LinkFile): Effect.Effect<string, CliFailure> =>
  Effect.tryPromise({
    try: async () => {
      const file = Path.join(Path.resolve(dir), linkFileName)
      await Fs.writeFile(file, `${JSON.stringify(link, null, 2)}\n`)
      return file
    },
    catch: (cause) => new CliFailure({ code: "link_write_failed", message: `cannot write ${linkFileName}: ${cause}` })
  })
