import { OrgsApi } from "@hostplane/api/orgs/OrgsApi"
import type { ComponentChildren, JSX } from "preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { clientOf, type Problem, problemOf } from "./api.ts"

/** Data a page shows: loaded on mount and when `deps` change, again every `poll` ms and when the tab is shown again. */
export const useLoad = <T,>(
  load: () => Promise<T>,
  deps: ReadonlyArray<unknown>,
  poll?: number | ((data: T | undefined) => number | undefined)
) => {
  const [data, setData] = useState<T | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const loadRef = useRef(load)
  loadRef.current = load
  const reload = useCallback(
    () =>
      loadRef.current().then(
        (value) => {
          setData(value)
          setProblem(undefined)
        },
        (error: unknown) => setProblem(problemOf(error))
      ),
    []
  )
  useEffect(() => {
    setData(undefined)
    setProblem(undefined)
    void reload()
  }, deps)
  const every = typeof poll === "function" ? poll(data) : poll
  useEffect(() => {
    if (every === undefined) return
    // Timers slow down in a background tab; coming back refreshes at once.
    const timer = setInterval(() => void reload(), every)
    const visible = () => {
      if (document.visibilityState === "visible") void reload()
    }
    document.addEventListener("visibilitychange", visible)
    return () => {
      clearInterval(timer)
      document.removeEventListener("visibilitychange", visible)
    }
  }, [every, ...deps])
  return { data, problem, reload, setData }
}

/** An action's state: busy while it runs, its failure shown beside it. */
export const useAction = () => {
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const run = async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true)
    setProblem(undefined)
    try {
      return await action()
    } catch (error) {
      setProblem(problemOf(error))
      return undefined
    } finally {
      setBusy(false)
    }
  }
  return { busy, problem, run, clear: () => setProblem(undefined) }
}

export const ErrorNote = ({ problem }: { readonly problem: Problem | undefined }) =>
  problem === undefined ? null : (
    <p role="alert" class="error">
      {problem.message} <code>{problem.code}</code>
    </p>
  )

export const Loading = () => <p class="muted">Loading…</p>

/** What to show while `data` loads or failed to. */
export const Loaded = <T,>(props: {
  readonly data: T | undefined
  readonly problem: Problem | undefined
  readonly children: (data: T) => ComponentChildren
}) =>
  props.data !== undefined ? (
    <>{props.children(props.data)}</>
  ) : props.problem ? (
    <ErrorNote problem={props.problem} />
  ) : (
    <Loading />
  )

export const Empty = ({ children }: { readonly children: ComponentChildren }) => <div class="empty">{children}</div>

export const Field = (props: { readonly label: string } & JSX.InputHTMLAttributes<HTMLInputElement>) => {
  const { label, ...input } = props
  return (
    <label class="field">
      <span>{label}</span>
      <input {...input} />
    </label>
  )
}

export const Select = (props: {
  readonly label: string
  readonly value: string
  readonly options: ReadonlyArray<string>
  readonly onChange: (value: string) => void
  readonly disabled?: boolean
}) => (
  <label class="field">
    <span>{props.label}</span>
    <select
      value={props.value}
      disabled={props.disabled}
      onChange={(event) => props.onChange((event.target as HTMLSelectElement).value)}
    >
      {props.options.map((option) => (
        <option key={option} value={option}>
          {option}
        </option>
      ))}
    </select>
  </label>
)

/** A confirmation in the page (never `window.confirm`): names what goes, with the action's own button. */
export const ConfirmDialog = (props: {
  readonly title: string
  readonly children?: ComponentChildren
  readonly confirmLabel: string
  readonly busy: boolean
  readonly problem: Problem | undefined
  readonly onConfirm: () => void
  readonly onClose: () => void
}) => {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current
    if (dialog !== null && !dialog.open) dialog.showModal()
  }, [])
  return (
    <dialog ref={ref} aria-labelledby="dialog-title" onClose={props.onClose} onCancel={props.onClose}>
      <h2 id="dialog-title">{props.title}</h2>
      {props.children}
      <ErrorNote problem={props.problem} />
      <div class="row">
        <button type="button" class="secondary" onClick={props.onClose}>
          Cancel
        </button>
        <button type="button" class="danger" disabled={props.busy} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  )
}

/** A destructive action with its in-page confirmation. */
export const DangerButton = (props: {
  readonly label: string
  readonly title: string
  readonly detail?: ComponentChildren
  readonly disabled?: boolean
  readonly action: () => Promise<unknown>
  readonly done?: () => void
}) => {
  const [open, setOpen] = useState(false)
  const { busy, problem, run, clear } = useAction()
  return (
    <>
      <button type="button" class="danger" disabled={props.disabled === true} onClick={() => setOpen(true)}>
        {props.label}
      </button>
      {open && (
        <ConfirmDialog
          title={props.title}
          confirmLabel={props.label}
          busy={busy}
          problem={problem}
          onClose={() => {
            clear()
            setOpen(false)
          }}
          onConfirm={() =>
            void run(async () => {
              await props.action()
              return true as const
            }).then((ok) => {
              if (ok === true) {
                setOpen(false)
                props.done?.()
              }
            })
          }
        >
          {props.detail}
        </ConfirmDialog>
      )}
    </>
  )
}

export const time = (iso: string | null | undefined): string =>
  iso === null || iso === undefined
    ? "—"
    : new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })

export const bytes = (n: number): string =>
  n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`

export type Role = "viewer" | "member" | "admin"
const rank: Record<Role, number> = { viewer: 0, member: 1, admin: 2 }

const orgs = clientOf(OrgsApi)
let roles: Promise<Map<string, Role>> | undefined

/** The caller's role in each org, read once per page load: it hides or disables what the role may not do. */
export const useRole = (org: string) => {
  const [role, setRole] = useState<Role | undefined>(undefined)
  useEffect(() => {
    roles ??= orgs()
      .orgs.list()
      .then((list) => new Map(list.items.map((item) => [item.slug, item.role as Role])))
    roles.then(
      (map) => setRole(map.get(org)),
      () => {
        roles = undefined
      }
    )
  }, [org])
  return { role, can: (minimum: Role) => role !== undefined && rank[role] >= rank[minimum] }
}

export const forgetRoles = () => {
  roles = undefined
}

const label = (key: string) =>
  key
    .replace(/([A-Z])/g, " $1")
    .replace(/_/g, " ")
    .toLowerCase()

/** The plain fields of an answer as a list of facts (nested objects as JSON). */
export const Facts = ({ value }: { readonly value: object }) => (
  <dl class="facts">
    {Object.entries(value).map(([key, field]) => (
      <>
        <dt key={`${key}-t`}>{label(key)}</dt>
        <dd key={`${key}-d`}>
          {field === null ? "—" : typeof field === "object" ? <code>{JSON.stringify(field)}</code> : String(field)}
        </dd>
      </>
    ))}
  </dl>
)
