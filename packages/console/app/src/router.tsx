import type { ComponentChildren, JSX } from "preact"
import { useEffect, useState } from "preact/hooks"

const listeners = new Set<() => void>()

/**
 * The path prefix a host mounted hostplane under (`/platform`), announced by the server in the page; `""` at the
 * root. The console's own paths (`/orgs/...`) are below it in the address bar, and so is the API.
 */
export const base = document.querySelector('meta[name="hostplane-base"]')?.getAttribute("content") ?? ""

/** A console path (`/orgs/acme`) as an address under the prefix. */
export const href = (path: string): string => `${base}${path}`

/** The console path of the address bar, the prefix cut off. */
export const currentPath = (): string =>
  base !== "" && location.pathname.startsWith(base) ? location.pathname.slice(base.length) || "/" : location.pathname

export const navigate = (to: string, replace = false): void => {
  if (replace) history.replaceState(null, "", href(to))
  else history.pushState(null, "", href(to))
  listeners.forEach((listener) => listener())
  window.scrollTo(0, 0)
}

/** The current location (path and query), re-rendering on navigation and on back/forward. */
export const useLocation = (): { readonly path: string; readonly query: URLSearchParams } => {
  const [, setTick] = useState(0)
  useEffect(() => {
    const update = () => setTick((tick) => tick + 1)
    listeners.add(update)
    window.addEventListener("popstate", update)
    return () => {
      listeners.delete(update)
      window.removeEventListener("popstate", update)
    }
  }, [])
  return { path: currentPath(), query: new URLSearchParams(location.search) }
}

/** A link that navigates inside the console without reloading it. */
export const Link = (
  props: { readonly href: string; readonly children: ComponentChildren } & JSX.HTMLAttributes<HTMLAnchorElement>
) => {
  const { href: to, children, ...rest } = props
  return (
    <a
      {...rest}
      href={href(to)}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
        event.preventDefault()
        navigate(to)
      }}
    >
      {children}
    </a>
  )
}

/** `/orgs/:org/projects/:project` against a path: the decoded parameters, or undefined. */
export const match = (pattern: string, path: string): Record<string, string> | undefined => {
  const names: Array<string> = []
  const source = pattern.replace(/:([a-z]+)/g, (_, name: string) => {
    names.push(name)
    return "([^/]+)"
  })
  const found = new RegExp(`^${source}/?$`).exec(path)
  if (found === null) return undefined
  return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1]!)]))
}

export const enc = encodeURIComponent
