// Java as a program calls it, for the resolver matrix (tests/resolvers.rs):
// InetAddress.getAllByName for "host" (the JDK calls the libc's
// getaddrinfo, so glibc's search walk applies) and JNDI's DNS provider
// (com.sun.jndi.dns.DnsContextFactory, its own client reading the
// nameservers from /etc/resolv.conf, no search list) for "srv" and "ptr".
// Reads "ID KIND NAME" lines on stdin and prints "ID MILLISECONDS ok
// VALUE..." or "ID MILLISECONDS err CLASS DETAIL".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.Security;
import java.util.ArrayList;
import java.util.Hashtable;
import java.util.List;
import javax.naming.CommunicationException;
import javax.naming.NameNotFoundException;
import javax.naming.NamingEnumeration;
import javax.naming.NamingException;
import javax.naming.ServiceUnavailableException;
import javax.naming.directory.Attribute;
import javax.naming.directory.InitialDirContext;

public class Lookup {
    static List<String> jndi(String name, String type) throws NamingException {
        Hashtable<String, String> env = new Hashtable<>();
        env.put("java.naming.factory.initial", "com.sun.jndi.dns.DnsContextFactory");
        env.put("java.naming.provider.url", "dns:");
        InitialDirContext ctx = new InitialDirContext(env);
        try {
            Attribute attr = ctx.getAttributes(name, new String[] {type}).get(type);
            List<String> out = new ArrayList<>();
            if (attr == null) {
                throw new NameNotFoundException("no " + type + " records");
            }
            NamingEnumeration<?> values = attr.getAll();
            while (values.hasMore()) {
                out.add(values.next().toString().replace(' ', ':'));
            }
            return out;
        } finally {
            ctx.close();
        }
    }

    /** The reverse name of an address literal (in-addr.arpa or ip6.arpa). */
    static String reverse(String ip) throws UnknownHostException {
        byte[] a = InetAddress.getByName(ip).getAddress();
        StringBuilder name = new StringBuilder();
        for (int i = a.length - 1; i >= 0; i--) {
            int b = a[i] & 0xff;
            if (a.length == 4) {
                name.append(b).append('.');
            } else {
                name.append(Integer.toHexString(b & 0xf)).append('.');
                name.append(Integer.toHexString(b >> 4)).append('.');
            }
        }
        return name.append(a.length == 4 ? "in-addr.arpa." : "ip6.arpa.").toString();
    }

    static String one(String kind, String name) {
        try {
            List<String> values = new ArrayList<>();
            switch (kind) {
                case "host":
                    for (InetAddress a : InetAddress.getAllByName(name)) {
                        values.add(a.getHostAddress());
                    }
                    break;
                case "srv":
                    values = jndi(name, "SRV");
                    break;
                case "ptr":
                    values = jndi(reverse(name), "PTR");
                    break;
                default:
                    return null;
            }
            return "ok " + String.join(" ", values);
        } catch (UnknownHostException e) {
            // The JDK turns every getaddrinfo failure into this exception;
            // only the message (gai_strerror) tells the class.
            String m = String.valueOf(e.getMessage());
            return (m.contains("Temporary failure") ? "err temp " : "err notfound ") + m;
        } catch (NameNotFoundException e) {
            return "err notfound " + e.getClass().getSimpleName();
        } catch (ServiceUnavailableException e) {
            return "err temp " + e.getClass().getSimpleName();
        } catch (CommunicationException e) {
            return "err timeout " + e.getClass().getSimpleName();
        } catch (Exception e) {
            return "err error " + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        // The JDK caches lookups (30 s found, 10 s not found); each cell is
        // a fresh lookup here.
        Security.setProperty("networkaddress.cache.ttl", "0");
        Security.setProperty("networkaddress.cache.negative.ttl", "0");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split("\\s+");
            if (f.length != 3) {
                continue;
            }
            long start = System.nanoTime();
            String out = one(f[1], f[2]);
            if (out == null) {
                continue;
            }
            System.out.println(f[0] + " " + (System.nanoTime() - start) / 1000000 + " " + out.replace('\n', ' '));
            System.out.flush();
        }
    }
}
