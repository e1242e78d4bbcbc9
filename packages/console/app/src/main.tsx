import { type ComponentType, render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { whenSignedOut } from "./api.ts"
import { DevLogin } from "./devLogin.tsx"
import { enc, href, Link, match, navigate, useLocation } from "./router.tsx"
import {
  devLoginOn,
  forgetSession,
  hostLoginOn,
  hostSignedIn,
  readSession,
  setHostSignedIn,
  takeFragment
} from "./session.ts"
import { ErrorNote, forgetRoles, Loading } from "./ui.tsx"
import "./styles.css"

type Page = ComponentType<{ readonly params: Record<string, string> }>
type Loader = () => Promise<{ readonly default: Page }>

const p = "/orgs/:org/projects/:project"
/** Every console URL of decisions.md part 14, with the page that answers it (loaded on first use). */
const routes: ReadonlyArray<readonly [string, Loader]> = [
  ["/", () => import("./pages/Orgs.tsx")],
  ["/account", () => import("./pages/Account.tsx")],
  ["/invites/:token", () => import("./pages/Invite.tsx")],
  ["/orgs/:org", () => import("./pages/Org.tsx")],
  ["/orgs/:org/members", () => import("./pages/Members.tsx")],
  ["/orgs/:org/settings", () => import("./pages/Settings.tsx")],
  ["/orgs/:org/domains", () => import("./pages/Domains.tsx")],
  ["/orgs/:org/dns/:zone", () => import("./pages/Dns.tsx")],
  [p, () => import("./pages/Project.tsx")],
  [`${p}/deployments`, () => import("./pages/Deployments.tsx")],
  [`${p}/logs`, () => import("./pages/Logs.tsx")],
  [`${p}/hostnames`, () => import("./pages/Hostnames.tsx")],
  [`${p}/secrets`, () => import("./pages/Secrets.tsx")],
  [`${p}/addons`, () => import("./pages/Addons.tsx")],
  [`${p}/access`, () => import("./pages/Access.tsx")],
  [`${p}/repos`, () => import("./pages/Repos.tsx")],
  [`${p}/repos/:repo`, () => import("./pages/Repo.tsx")],
  [`${p}/repos/:repo/commits`, () => import("./pages/Commits.tsx")],
  [`${p}/repos/:repo/ref-updates`, () => import("./pages/RefUpdates.tsx")]
]

const loaded = new Map<Loader, Page>()

const Route = ({ loader, params }: { readonly loader: Loader; readonly params: Record<string, string> }) => {
  const [page, setPage] = useState<Page | undefined>(() => loaded.get(loader))
  const [failed, setFailed] = useState(false)
  useEffect(() => {
    if (loaded.has(loader)) return setPage(() => loaded.get(loader))
    loader().then(
      (module) => {
        loaded.set(loader, module.default)
        setPage(() => module.default)
      },
      () => setFailed(true)
    )
  }, [loader])
  if (failed)
    return (
      <ErrorNote problem={{ message: "this page could not be loaded: reload to try again", code: "load_failed" }} />
    )
  const Component = page
  return Component === undefined ? <Loading /> : <Component params={params} />
}

const SignIn = ({ error }: { readonly error: string | undefined }) => {
  return (
    <main class="signin">
      <h1>Sign in to hostplane</h1>
      {error !== undefined && (
        <p role="alert" class="error">
          Sign-in failed: {error}
        </p>
      )}
      <p>
        <button
          type="button"
          onClick={() => {
            location.href = href(`/v1/auth/idp/start?redirect=${enc(location.href)}`)
          }}
        >
          Sign in
        </button>
      </p>
      {devLoginOn() && <DevLogin />}
    </main>
  )
}

const Nav = ({ path }: { readonly path: string }) => {
  const orgParams = /^\/orgs\/([^/]+)/.exec(path)
  const projectParams = /^\/orgs\/([^/]+)\/projects\/([^/]+)/.exec(path)
  const link = (href: string, label: string, exact = false) => (
    <Link
      href={href}
      aria-current={(exact ? path === href : path === href || path.startsWith(`${href}/`)) ? "page" : undefined}
    >
      {label}
    </Link>
  )
  return (
    <nav aria-label="Sections">
      {orgParams !== null && (
        <div class="tabs">
          <strong>{decodeURIComponent(orgParams[1]!)}</strong>
          {link(`/orgs/${orgParams[1]}`, "Projects", true)}
          {link(`/orgs/${orgParams[1]}/members`, "Members")}
          {link(`/orgs/${orgParams[1]}/domains`, "Domains")}
          {link(`/orgs/${orgParams[1]}/settings`, "Settings")}
        </div>
      )}
      {projectParams !== null && (
        <div class="tabs">
          <strong>{decodeURIComponent(projectParams[2]!)}</strong>
          {link(projectParams[0], "Overview", true)}
          {link(`${projectParams[0]}/deployments`, "Deployments")}
          {link(`${projectParams[0]}/logs`, "Logs")}
          {link(`${projectParams[0]}/hostnames`, "Hostnames")}
          {link(`${projectParams[0]}/secrets`, "Secrets")}
          {link(`${projectParams[0]}/addons`, "Add-ons")}
          {link(`${projectParams[0]}/access`, "Access")}
          {link(`${projectParams[0]}/repos`, "Repos")}
        </div>
      )}
    </nav>
  )
}

const fragment = takeFragment()

/** Whether the host's cookie signs this tab in: asked once, when the host has a sign-in and this tab has no token. */
const askHost = (): Promise<boolean> =>
  fetch(href("/v1/me"), { credentials: "same-origin" }).then(
    (reply) => reply.ok,
    () => false
  )

const App = () => {
  const { path } = useLocation()
  const [, setSignedIn] = useState(readSession() !== undefined)
  // undefined while the host is asked; the console's own session comes first.
  const [hostAnswered, setHostAnswered] = useState(!hostLoginOn() || readSession() !== undefined)
  useEffect(
    () =>
      whenSignedOut(() => {
        setHostSignedIn(false)
        setSignedIn(false)
      }),
    []
  )
  useEffect(() => {
    if (hostAnswered) return
    void askHost().then((signedIn) => {
      setHostSignedIn(signedIn)
      setHostAnswered(true)
    })
  }, [hostAnswered])
  // `/console/`, where a host may link to the console, is its home page.
  useEffect(() => {
    if (path === "/console" || path === "/console/") navigate("/", true)
  }, [path])
  if (!hostAnswered) return <Loading />
  const session = readSession()
  const found = routes
    .map(([pattern, loader]) => [match(pattern, path), loader, pattern] as const)
    .find(([params]) => params !== undefined)
  const isInvite = path.startsWith("/invites/")
  if (session === undefined && !hostSignedIn() && !isInvite) return <SignIn error={fragment.error} />
  return (
    <>
      <header>
        <Link href="/" class="brand">
          hostplane
        </Link>
        {session === undefined && hostSignedIn() && (
          <span class="who">
            <Link href="/account">Account</Link>
          </span>
        )}
        {session !== undefined && (
          <span class="who">
            <Link href="/account">Account</Link>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                forgetSession()
                forgetRoles()
                setSignedIn(false)
                navigate("/")
              }}
            >
              Sign out
            </button>
          </span>
        )}
      </header>
      <Nav path={path} />
      <main>
        {found === undefined ? (
          <>
            <h1>Page not found</h1>
            <p>
              Nothing lives at this address. <Link href="/">Go to your orgs</Link>.
            </p>
          </>
        ) : (
          <Route key={found[2]} loader={found[1]} params={found[0]!} />
        )}
      </main>
    </>
  )
}

render(<App />, document.getElementById("app")!)
