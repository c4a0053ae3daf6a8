package refstore.interop;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import org.eclipse.jgit.internal.storage.file.FileReftableDatabase;
import org.eclipse.jgit.lib.BatchRefUpdate;
import org.eclipse.jgit.lib.NullProgressMonitor;
import org.eclipse.jgit.lib.ObjectId;
import org.eclipse.jgit.lib.PersonIdent;
import org.eclipse.jgit.lib.Ref;
import org.eclipse.jgit.lib.RefDatabase;
import org.eclipse.jgit.lib.Repository;
import org.eclipse.jgit.revwalk.RevWalk;
import org.eclipse.jgit.storage.file.FileRepositoryBuilder;
import org.eclipse.jgit.transport.ReceiveCommand;

/**
 * A long-lived JGit that takes requests on stdin and answers on stdout, so
 * that stress tests racing JGit against other programs pay the JVM's start-up
 * once rather than per operation. Every request opens the repository afresh,
 * as a new JGit process would, so no cached view of the refs outlives it.
 *
 * <pre>
 * apply GITDIR      followed by git update-ref --stdin lines ("create NAME NEW",
 *                   "update NAME NEW OLD", "delete NAME OLD") and a line "end":
 *                   one atomic BatchRefUpdate, old values checked, non-fast-forward
 *                   updates allowed. Answers one line per ref, "ref NAME RESULT
 *                   [MESSAGE]", from the last attempt, then one of
 *                     applied ATTEMPTS              every ref updated
 *                     lock-failed ATTEMPTS          every attempt failed to take
 *                                                   tables.list.lock or found the
 *                                                   stack changed under it (JGit
 *                                                   then writes nothing)
 *                     rejected ATTEMPTS NAME RESULT MESSAGE   refused for another
 *                                                   reason, e.g. an old value
 * compact GITDIR    compactFully() of the reftable stack: "compacted ATTEMPTS" or
 *                   "not-compacted ATTEMPTS" (the lock was held or the stack
 *                   changed during every attempt)
 * list GITDIR       every ref below refs/: "ref OID NAME" lines, sorted
 * </pre>
 *
 * Every answer ends with a line holding a single dot; a request that throws
 * answers "error MESSAGE" instead of its last line. apply and compact retry
 * for up to RETRY_MILLIS while JGit reports only lock contention: JGit takes
 * its locks without waiting, where git and refstore wait a while for them.
 * A batch that fails with an I/O error is not retried (JGit then answers
 * LOCK_FAILURE "io error" for the first ref even when its table was already
 * listed); the answer is "error" followed by what JGit reads afterwards of
 * the batch's refs: "error io: N of M refs as the batch would leave them".
 */
public final class JGitSession {
    private static final long RETRY_MILLIS = 1000;

    private JGitSession() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) {
                continue;
            }
            String[] f = line.split(" ", 2);
            if (f.length != 2) {
                out.println("error bad request: " + line);
                out.println(".");
                out.flush();
                continue;
            }
            File gitDir = new File(f[1]);
            List<String> body = new ArrayList<>();
            if (f[0].equals("apply")) {
                for (String l; (l = in.readLine()) != null && !l.equals("end");) {
                    body.add(l);
                }
            }
            try {
                switch (f[0]) {
                    case "apply" -> apply(gitDir, body, out);
                    case "compact" -> compact(gitDir, out);
                    case "list" -> list(gitDir, out);
                    default -> out.println("error unknown request: " + line);
                }
            } catch (Exception e) {
                out.println("error " + oneLine(e));
            }
            out.println(".");
            out.flush();
        }
    }

    private static String oneLine(Throwable e) {
        String text = e.toString();
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            text += " (caused by " + c + ")";
        }
        return text.replace('\n', ' ');
    }

    private static Repository open(File gitDir) throws Exception {
        return new FileRepositoryBuilder().setGitDir(gitDir).setMustExist(true).build();
    }

    private static ReceiveCommand command(String line) {
        String[] f = line.split(" ", -1);
        ObjectId zero = ObjectId.zeroId();
        return switch (f[0]) {
            case "create" -> new ReceiveCommand(zero, ObjectId.fromString(f[2]), f[1], ReceiveCommand.Type.CREATE);
            case "update" -> new ReceiveCommand(ObjectId.fromString(f[3]), ObjectId.fromString(f[2]), f[1],
                    ReceiveCommand.Type.UPDATE);
            case "delete" -> new ReceiveCommand(ObjectId.fromString(f[2]), zero, f[1], ReceiveCommand.Type.DELETE);
            default -> throw new IllegalArgumentException("unknown command: " + line);
        };
    }

    private static void apply(File gitDir, List<String> lines, PrintStream out) throws Exception {
        long deadline = System.currentTimeMillis() + RETRY_MILLIS;
        for (int attempt = 1;; attempt++) {
            List<ReceiveCommand> commands = new ArrayList<>();
            for (String line : lines) {
                if (!line.isBlank()) {
                    commands.add(command(line));
                }
            }
            try (Repository repo = open(gitDir)) {
                BatchRefUpdate batch = repo.getRefDatabase().newBatchUpdate();
                batch.setAtomic(true);
                batch.setAllowNonFastForwards(true);
                batch.setRefLogMessage("jgit race", false);
                batch.setRefLogIdent(new PersonIdent(repo));
                batch.addCommand(commands);
                try (RevWalk walk = new RevWalk(repo)) {
                    batch.execute(walk, NullProgressMonitor.INSTANCE);
                }
                boolean allOk = true;
                boolean onlyLock = true;
                ReceiveCommand first = null;
                for (ReceiveCommand c : commands) {
                    allOk &= c.getResult() == ReceiveCommand.Result.OK;
                    onlyLock &= c.getResult() == ReceiveCommand.Result.LOCK_FAILURE && c.getMessage() == null;
                    if (first == null && c.getResult() != ReceiveCommand.Result.OK) {
                        first = c;
                    }
                }
                boolean retry = onlyLock && System.currentTimeMillis() < deadline;
                if (retry) {
                    Thread.sleep(1);
                    continue;
                }
                for (ReceiveCommand c : commands) {
                    out.println("ref " + c.getRefName() + " " + c.getResult()
                            + (c.getMessage() == null ? "" : " " + c.getMessage()));
                }
                if (allOk) {
                    out.println("applied " + attempt);
                } else if (onlyLock) {
                    out.println("lock-failed " + attempt);
                } else if ("io error".equals(first.getMessage())) {
                    out.println("error io: " + landed(gitDir, commands) + " of " + commands.size()
                            + " refs as the batch would leave them");
                } else {
                    out.println("rejected " + attempt + " " + first.getRefName() + " " + first.getResult() + " "
                            + first.getMessage());
                }
                return;
            }
        }
    }

    /** How many of the batch's refs JGit now reads at the value the batch gives them. */
    private static int landed(File gitDir, List<ReceiveCommand> commands) throws Exception {
        int n = 0;
        try (Repository repo = open(gitDir)) {
            RefDatabase db = repo.getRefDatabase();
            for (ReceiveCommand c : commands) {
                Ref ref = db.exactRef(c.getRefName());
                ObjectId now = ref == null ? ObjectId.zeroId() : ref.getObjectId();
                if (c.getNewId().equals(now)) {
                    n++;
                }
            }
        }
        return n;
    }

    private static void compact(File gitDir, PrintStream out) throws Exception {
        long deadline = System.currentTimeMillis() + RETRY_MILLIS;
        for (int attempt = 1;; attempt++) {
            try (Repository repo = open(gitDir)) {
                if (!(repo.getRefDatabase() instanceof FileReftableDatabase db)) {
                    throw new IllegalStateException("not a reftable repository: " + gitDir);
                }
                int failedBefore = failedCompactions(db);
                db.compactFully();
                if (failedCompactions(db) == failedBefore) {
                    out.println("compacted " + attempt);
                    return;
                }
            }
            if (System.currentTimeMillis() >= deadline) {
                out.println("not-compacted " + attempt);
                return;
            }
            Thread.sleep(1);
        }
    }

    /**
     * The count of failed compactions of the database's stack. compactFully()
     * returns nothing and a failure to take the lock is no exception, so this
     * count (JGit's own, kept for its tests) is the only sign of whether the
     * stack was compacted.
     */
    private static int failedCompactions(FileReftableDatabase db) throws Exception {
        Field stackField = FileReftableDatabase.class.getDeclaredField("reftableStack");
        stackField.setAccessible(true);
        Object stack = stackField.get(db);
        Method getStats = stack.getClass().getDeclaredMethod("getStats");
        getStats.setAccessible(true);
        Object stats = getStats.invoke(stack);
        Field failed = stats.getClass().getDeclaredField("failed");
        failed.setAccessible(true);
        return failed.getInt(stats);
    }

    private static void list(File gitDir, PrintStream out) throws Exception {
        TreeMap<String, Ref> sorted = new TreeMap<>();
        try (Repository repo = open(gitDir)) {
            for (Ref ref : repo.getRefDatabase().getRefsByPrefix("refs/")) {
                sorted.put(ref.getName(), ref);
            }
        }
        for (Ref ref : sorted.values()) {
            ObjectId id = ref.getObjectId();
            out.println("ref " + (id == null ? "null" : id.name()) + " " + ref.getName());
        }
    }
}
